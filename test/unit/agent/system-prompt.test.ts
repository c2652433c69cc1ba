import { describe, expect, it } from "vitest";
import { buildSystemPrompt } from "../../../src/agent/system-prompt.js";

describe("buildSystemPrompt", () => {
  const prompt = buildSystemPrompt({
    workdir: "/workspace",
    network: "none",
    timeoutSeconds: 120,
    maxTimeoutSeconds: 600,
  });

  it("states the facts of the sandbox", () => {
    for (const fact of [
      "Linux sandbox container",
      "mounted at /workspace",
      "persists between bash calls",
      'no network access (network mode "none")',
      "killed after 120 seconds",
      "at most 600",
      "stdin is closed",
      "nohup",
      "2>&1 &",
      "head and the tail are kept",
    ]) {
      expect(prompt).toContain(fact);
    }
  });

  it("says how to work and how to finish", () => {
    expect(prompt).toContain("Act, don't explain");
    expect(prompt).toContain("reply without a tool call");
    expect(prompt).toMatch(/summarise/);
  });

  it("names the read-only project paths and the read_output tool only when they apply", () => {
    const plain = buildSystemPrompt({ workdir: "/workspace", network: "none", timeoutSeconds: 120 });
    expect(plain).not.toMatch(/read-only for you|read_output/);
    const full = buildSystemPrompt({
      workdir: "/workspace",
      network: "none",
      timeoutSeconds: 120,
      readOnlyPaths: [".git/config", ".git/hooks"],
      savedOutput: true,
    });
    expect(full).toContain("These project paths are read-only for you: .git/config, .git/hooks.");
    expect(full).toContain("git -c key=value");
    expect(full).toContain("`read_output` tool");
  });

  it("names an enabled network mode", () => {
    const open = buildSystemPrompt({ workdir: "/w", network: "bridge", timeoutSeconds: 30 });
    expect(open).toContain('Network access is enabled (network mode "bridge").');
    expect(open).not.toContain("no network access");
    expect(open).not.toContain("at most");
  });

  it("appends extra instructions", () => {
    const withExtra = buildSystemPrompt({
      workdir: "/w",
      network: "none",
      timeoutSeconds: 30,
      extraInstructions: " Use pnpm. ",
    });
    expect(withExtra.endsWith("\n\nUse pnpm.")).toBe(true);
  });
});
