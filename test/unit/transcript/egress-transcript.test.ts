import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { combineEvents } from "../../../src/agent/events.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeEgressMonitor, FakeSandbox } from "../../support/fake-sandbox.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-egress-transcript-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

type Row = Record<string, unknown> & { type: string; time: string };
const read = (path: string): Row[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Row);

describe("createTranscript: allowlist mode", () => {
  it("records the policy in run_start and every gateway record, with the call it happened in", async () => {
    const path = join(dir, "run.jsonl");
    const egress = { allowHosts: ["example.com:443,80"], allowPrivate: true, limitBytes: 4096 };
    const transcript = createTranscript(path, {
      runStart: { commandTimeoutMs: 1000, egress },
      now: () => new Date("2026-11-30T10:00:05.000Z"),
    });
    const monitor = new FakeEgressMonitor();
    const sandbox = new FakeSandbox(
      (_command, options) => {
        monitor.emit({ callId: options.callId, address: "127.0.0.1", durationMs: 12 });
        monitor.emit({
          callId: options.callId,
          host: "evil.example.net",
          port: 8443,
          method: "GET",
          allowed: false,
          reason: "not on the allowlist",
          status: 403,
          bytesUp: 0,
          bytesDown: 0,
        });
        return {};
      },
      { egress: monitor },
    );
    const events = combineEvents(transcript);
    monitor.subscribe((record) => events.onEgress(record));
    const { run } = fixture([toolCalls(bash("toolu_7", "curl example.com")), answer("ok")], {
      sandbox,
      events,
    });
    await run();
    // Between runs: no command, so no call id.
    monitor.emit({ bytesUp: 1, bytesDown: 1 });

    const rows = read(path);
    expect(rows[0]).toMatchObject({ type: "run_start", commandTimeoutMs: 1000, egress });
    const records = rows.filter((row) => row.type === "egress");
    expect(records).toEqual([
      {
        type: "egress",
        time: "2026-11-30T10:00:05.000Z",
        openedAt: "2026-11-30T10:00:00.000Z",
        callId: "toolu_7",
        host: "example.com",
        port: 443,
        method: "CONNECT",
        allowed: true,
        bytesUp: 100,
        bytesDown: 1000,
        durationMs: 12,
        address: "127.0.0.1",
      },
      {
        type: "egress",
        time: "2026-11-30T10:00:05.000Z",
        openedAt: "2026-11-30T10:00:00.000Z",
        callId: "toolu_7",
        host: "evil.example.net",
        port: 8443,
        method: "GET",
        allowed: false,
        bytesUp: 0,
        bytesDown: 0,
        durationMs: 20,
        reason: "not on the allowlist",
        status: 403,
      },
      expect.not.objectContaining({ callId: expect.anything() }),
    ]);
    const callRow = rows.findIndex((row) => row.type === "tool_call");
    const resultRow = rows.findIndex((row) => row.type === "tool_result");
    const firstEgress = rows.findIndex((row) => row.type === "egress");
    expect(callRow).toBeLessThan(firstEgress);
    expect(firstEgress).toBeLessThan(resultRow);
  });

  it("keeps the name a wildcard entry had looked up, and writes no lookedUp field otherwise", () => {
    const path = join(dir, "names.jsonl");
    const events = combineEvents(createTranscript(path, { runStart: { commandTimeoutMs: 5 } }));
    const monitor = new FakeEgressMonitor();
    monitor.subscribe((record) => events.onEgress(record));
    monitor.emit({ host: "a.example.org", lookedUp: "a.example.org" });
    monitor.emit({ host: "a.example.org" });
    const records = read(path).filter((row) => row.type === "egress");
    expect(records[0]).toMatchObject({ host: "a.example.org", lookedUp: "a.example.org" });
    expect(records[1]).not.toHaveProperty("lookedUp");
  });

  it("writes no egress field in run_start without allowlist mode", async () => {
    const path = join(dir, "plain.jsonl");
    const { run } = fixture([answer("ok")], {
      events: createTranscript(path, { runStart: { commandTimeoutMs: 5 } }),
    });
    await run();
    expect(read(path)[0]).not.toHaveProperty("egress");
  });
});
