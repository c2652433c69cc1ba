/** Allowlist mode's records in the three output formats, from a fake gateway emitting during a command. */
import { describe, expect, it } from "vitest";
import type { SandboxFacts } from "../../../src/output/stream-json-output.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeEgressMonitor, FakeSandbox } from "../../support/fake-sandbox.js";
import { sandboxFacts, setupOutput } from "../../support/run-output-fixture.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";

const refusal = "not on the allowlist (--allow-host evil.example.net would allow it)";

/** A run of one command during which the gateway records two allowed connections and one refusal. */
async function runWithGateway(format: "text" | "json" | "stream-json") {
  const setup = setupOutput(format);
  const monitor = new FakeEgressMonitor({ allowHosts: ["example.com:443,80"], limitBytes: 1024 ** 3 });
  const sandbox = new FakeSandbox(
    (_command, options) => {
      monitor.emit({ callId: options.callId, bytesUp: 300, bytesDown: 5000, address: "127.0.0.1" });
      monitor.emit({ callId: options.callId, bytesUp: 200, bytesDown: 2000 });
      monitor.emit({
        callId: options.callId,
        host: "evil.example.net",
        allowed: false,
        reason: refusal,
        status: 403,
        bytesUp: 0,
        bytesDown: 0,
      });
      return { exitCode: 0 };
    },
    { egress: monitor },
  );
  const facts: SandboxFacts = {
    ...sandboxFacts,
    description: { ...sandboxFacts.description, network: "allowlist" },
    egress: monitor,
  };
  const events = setup.output.listener(facts);
  // As run-command wires it: the monitor feeds the same listener the loop reports to.
  monitor.subscribe((record) => events.onEgress?.(record));
  const { run } = fixture([toolCalls(bash("toolu_1", "npm install")), answer("Installed.")], {
    sandbox,
    events,
  });
  await run("install");
  return setup;
}

describe("allowlist mode in stream-json", () => {
  it("reports the policy in init, one system/egress line per record, and counts in the result", async () => {
    const { lines } = await runWithGateway("stream-json");
    const all = lines();
    expect(all[0]).toMatchObject({
      subtype: "init",
      network: "allowlist",
      egress: { allow_hosts: ["example.com:443,80"], allow_private: false, limit_bytes: 1024 ** 3 },
    });
    const egress = all.filter((line) => line["subtype"] === "egress");
    expect(egress).toHaveLength(3);
    expect(egress[0]).toEqual({
      type: "system",
      subtype: "egress",
      opened_at: "2026-11-30T10:00:00.000Z",
      tool_use_id: "toolu_1",
      host: "example.com",
      port: 443,
      method: "CONNECT",
      allowed: true,
      reason: null,
      address: "127.0.0.1",
      status: null,
      bytes_up: 300,
      bytes_down: 5000,
      duration_ms: 20,
      session_id: "run-1",
    });
    expect(egress[2]).toMatchObject({
      host: "evil.example.net",
      allowed: false,
      reason: refusal,
      status: 403,
    });
    expect(all.at(-1)?.["egress"]).toEqual({
      connections: 3,
      denied: 1,
      bytes_up: 500,
      bytes_down: 7000,
      hosts: ["example.com:443"],
      denied_hosts: ["evil.example.net:443"],
    });
  });

  it("adds no egress field or line without a gateway", async () => {
    const { output, lines } = setupOutput("stream-json");
    const { run } = fixture([answer("Hi.")], { events: output.listener(sandboxFacts) });
    await run();
    expect(lines()[0]).not.toHaveProperty("egress");
    expect(lines().at(-1)).not.toHaveProperty("egress");
  });
});

describe("allowlist mode in json", () => {
  it("puts the counts in the result, before error, and the summary on stderr", async () => {
    const { lines, stderr } = await runWithGateway("json");
    const [result] = lines();
    expect(result?.["egress"]).toMatchObject({ connections: 3, denied: 1, hosts: ["example.com:443"] });
    expect(Object.keys(result ?? {}).at(-1)).toBe("egress");
    expect(stderr.text()).toContain("network: refused evil.example.net:443");
  });
});

describe("allowlist mode in text", () => {
  it("ends with what was reached, the bytes, and each refusal with its reason", async () => {
    const { stdout } = await runWithGateway("text");
    const text = stdout.text();
    const tail = text.slice(text.indexOf("network:"));
    expect(tail).toBe(
      [
        "network: 3 connections through the gateway, 6.8 KiB down, 500 B up",
        "network: reached example.com:443 (2 connections, 7.3 KiB)",
        `network: refused evil.example.net:443: ${refusal}`,
        "",
      ].join("\n"),
    );
    expect(text.indexOf("submitted")).toBeLessThan(text.indexOf("network:"));
  });

  it("says when nothing went through, and shows escape sequences in the sandbox's host names as escapes", async () => {
    const { output, stdout } = setupOutput("text");
    const monitor = new FakeEgressMonitor();
    const events = output.listener({ ...sandboxFacts, egress: monitor });
    monitor.subscribe((record) => events.onEgress?.(record));
    const { run } = fixture([answer("One."), answer("Two.")], { events });
    await run();
    expect(stdout.text()).toContain("network: allowlist mode; nothing went through the gateway");
    monitor.emit({
      host: "x\u001b]0;owned\u0007\u001b[2J.example",
      allowed: false,
      reason: "refused\nagain",
    });
    await run();
    const second = stdout.text().split("nothing went through the gateway")[1] ?? "";
    expect(second).toContain("network: refused x\\x1b]0;owned\\x07\\x1b[2J.example:443: refused again");
    expect(second).not.toContain("\u001b");
  });

  it("prints no network summary without a gateway", async () => {
    const { output, stdout } = setupOutput("text");
    const { run } = fixture([answer("Hi.")], { events: output.listener(sandboxFacts) });
    await run();
    expect(stdout.text()).not.toContain("network:");
  });
});
