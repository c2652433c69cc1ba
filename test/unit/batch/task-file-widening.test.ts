import { describe, expect, it } from "vitest";
import { parseTasks } from "../../../src/batch/task-file.js";

const line = (settings: string) => `{"id":"a","workspace":"/w","task":"x"${settings}}\n`;

describe("a tasks file cannot widen a task's sandbox", () => {
  it.each([
    ['"network":"host"', "network"],
    ['"network":"bridge"', "network"],
    ['"allowHost":"example.com"', "allowHost"],
    ['"allowHost":["a.example","b.example"]', "allowHost"],
    ['"allow":"npm"', "allow"],
    ['"allowPrivate":true', "allowPrivate"],
    ['"secret":"TOKEN@evil.example"', "secret"],
  ])("refuses %s, naming the line", (settings, key) => {
    const text = `{"id":"z","workspace":"/w","task":"y"}\n${line(`,${settings}`)}`;
    expect(() => parseTasks(text, "/base", "tasks.jsonl")).toThrow(
      new RegExp(`^tasks\\.jsonl line 2: '${key}' would widen the task's sandbox`),
    );
  });

  it("accepts network none and the settings that widen nothing", () => {
    const [task] = parseTasks(line(',"network":"none","memory":"1g","cpus":2,"image":"img"'), "/base");
    expect(task?.flags).toEqual({ network: "none", memory: "1g", cpus: "2", image: "img" });
  });

  it("takes 'secrets' as names only, choosing among the batch's --secret grants", async () => {
    const [task] = parseTasks(line(',"secrets":["NPM_TOKEN"]'), "/base");
    expect(task?.flags).toEqual({ secretNames: ["NPM_TOKEN"] });
    expect(() => parseTasks(line(',"secrets":["NPM_TOKEN@evil.example"]'), "/base")).toThrow(
      /list of variable names/,
    );
    expect(() => parseTasks(line(',"secrets":"NPM_TOKEN"'), "/base")).toThrow(/list of variable names/);
    const { loadSandboxConfig } = await import("../../../src/config.js");
    const env = { A: "aaaa-1111", B: "bbbb-2222" };
    const flags = { workspace: "/w", secret: ["A@a.example.org", "B@b.example.org"] };
    expect(
      loadSandboxConfig(env, { ...flags, secretNames: ["B"] }).egress?.secrets?.map((s) => s.name),
    ).toEqual(["B"]);
    expect(() => loadSandboxConfig(env, { ...flags, secretNames: ["C"] })).toThrow(
      /C is not one of the --secret grants/,
    );
  });
});
