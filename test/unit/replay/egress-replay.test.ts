import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { egressNotice } from "../../../src/cli/run/replay-command.js";
import { loadSandboxConfig } from "../../../src/config.js";
import { parseTranscript, readTranscript } from "../../../src/replay/read-transcript.js";
import { replayCalls } from "../../../src/replay/replay.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-egress-replay-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const egress = {
  allowHosts: ["registry.example.com:443", "example.org:443,80"],
  allowPrivate: true,
  limitBytes: 1024,
  clientEnv: ["npm_config_registry=https://registry.example.com/"],
};
const start = (fields: Record<string, unknown>) =>
  `${JSON.stringify({ type: "run_start", task: "t", ...fields })}\n`;

describe("readTranscript: allowlist mode", () => {
  it("reads back the allowlist `harness run` recorded", async () => {
    const path = join(dir, "run.jsonl");
    const { run } = fixture([toolCalls(bash("t1", "npm ci")), answer("ok")], {
      events: createTranscript(path, { runStart: { commandTimeoutMs: 1000, egress } }),
    });
    await run();
    const parsed = await readTranscript(path);
    expect(parsed.egress).toEqual(egress);
    expect(parsed.calls.map((call) => call.id)).toEqual(["t1"]);
  });

  it("has none without it, and refuses a malformed one with its line", () => {
    expect(parseTranscript(start({})).egress).toBeUndefined();
    expect(() => parseTranscript(start({ egress: { allowHosts: "example.com", limitBytes: 1 } }))).toThrow(
      /line 1: "egress" needs "allowHosts", a list of strings/,
    );
    expect(() => parseTranscript(start({ egress: { allowHosts: [], limitBytes: -1 } }))).toThrow(
      /"limitBytes"/,
    );
    expect(() =>
      parseTranscript(start({ egress: { allowHosts: [], limitBytes: 1, allowPrivate: "yes" } })),
    ).toThrow(/allowPrivate/);
    expect(() =>
      parseTranscript(start({ egress: { allowHosts: [], limitBytes: 1, clientEnv: "GOPROXY=x" } })),
    ).toThrow(/"egress.clientEnv" must be a list of strings/);
    expect(parseTranscript(start({ egress: { allowHosts: ["a.example"], limitBytes: 5 } })).egress).toEqual({
      allowHosts: ["a.example"],
      allowPrivate: false,
      limitBytes: 5,
    });
  });
});

describe("replay with the recording's allowlist", () => {
  const w = { workspace: "/w" };

  it("uses the recorded list and limit, but allows private addresses only when the flag says so", () => {
    const config = loadSandboxConfig({}, w, { inheritEgress: egress });
    expect(config.egress).toMatchObject({
      allowHosts: egress.allowHosts,
      allowPrivate: false,
      limitBytes: 1024,
      // The sandbox's tools pointed at the same registries as in the recording.
      clientEnv: egress.clientEnv,
    });
    expect(egressNotice(egress, config)).toBe(
      "replaying with the recording's allowlist: registry.example.com:443, example.org:443,80; the recording also allowed private addresses: pass --allow-private to allow them again",
    );
    const withFlag = loadSandboxConfig({}, { ...w, allowPrivate: true }, { inheritEgress: egress });
    expect(withFlag.egress?.allowPrivate).toBe(true);
    expect(egressNotice(egress, withFlag)).toBe(
      "replaying with the recording's allowlist: registry.example.com:443, example.org:443,80",
    );
  });

  it("says so when flags choose another list or network", () => {
    const own = loadSandboxConfig({}, { ...w, allowHost: ["example.net"] }, { inheritEgress: egress });
    expect(egressNotice(egress, own)).toMatch(/this replay uses the allowlist the flags give instead$/);
    const bridge = loadSandboxConfig({}, { ...w, network: "bridge" }, { inheritEgress: egress });
    expect(egressNotice(egress, bridge)).toMatch(/this replay uses network bridge instead$/);
    expect(egressNotice(undefined, bridge)).toBeUndefined();
  });

  it("runs each replayed command under its recorded call id", async () => {
    const sandbox = new FakeSandbox([{ stdout: "ok\n" }]);
    const { calls } = parseTranscript(
      [
        JSON.stringify({ type: "run_start", task: "t" }),
        JSON.stringify({ type: "tool_call", id: "toolu_r", name: "bash", input: { command: "echo ok" } }),
        JSON.stringify({ type: "tool_result", id: "toolu_r", stdout: "ok\n", stderr: "", exitCode: 0 }),
      ].join("\n"),
    );
    const report = await replayCalls(calls, sandbox, { timeoutMs: 1000 });
    expect(report.reproduced).toBe(true);
    expect(sandbox.calls[0]?.options.callId).toBe("toolu_r");
  });
});
