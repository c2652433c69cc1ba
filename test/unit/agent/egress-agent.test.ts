/** Allowlist mode in the agent layer: the call id reaches the tool, the prompt names the hosts, records pass through events. */
import { describe, expect, it } from "vitest";
import { combineEvents, guardEvents } from "../../../src/agent/events.js";
import { buildSystemPrompt } from "../../../src/agent/system-prompt.js";
import { runToolCalls } from "../../../src/agent/tool-turn.js";
import type { EgressRecord } from "../../../src/sandbox/sandbox.js";
import type { Tool, ToolContext } from "../../../src/tools/tool.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";

describe("runToolCalls: the call's id", () => {
  it("gives each tool its own tool_use id in the context", async () => {
    const seen: ToolContext[] = [];
    const tool: Tool<unknown> = {
      definition: { name: "probe", description: "", inputSchema: { type: "object", properties: {} } },
      parse: (input) => input,
      async run(_input, context) {
        seen.push(context);
        return { content: "ok", isError: false };
      },
    };
    const calls = [
      { id: "toolu_a", name: "probe", input: {} },
      { id: "toolu_b", name: "probe", input: {} },
    ];
    await runToolCalls(calls, { tools: [tool], events: guardEvents(undefined) });
    expect(seen.map((context) => context.callId)).toEqual(["toolu_a", "toolu_b"]);
  });

  it("reaches the sandbox through the bash tool in a whole run", async () => {
    const sandbox = new FakeSandbox();
    const { run } = fixture([toolCalls(bash("toolu_x", "curl https://example.com")), answer("done")], {
      sandbox,
    });
    await run();
    expect(sandbox.calls[0]?.options.callId).toBe("toolu_x");
  });
});

describe("combineEvents: onEgress", () => {
  it("hands each record to every listener, even after one throws", () => {
    const got: EgressRecord[] = [];
    const record: EgressRecord = {
      time: "t",
      host: "example.com",
      port: 443,
      method: "CONNECT",
      allowed: true,
      bytesUp: 1,
      bytesDown: 2,
      durationMs: 3,
    };
    const events = combineEvents(
      {
        onEgress: () => {
          throw new Error("broken listener");
        },
      },
      { onEgress: (r) => got.push(r) },
    );
    events.onEgress(record);
    expect(got).toEqual([record]);
  });
});

describe("buildSystemPrompt: allowlist mode", () => {
  const base = { workdir: "/workspace", timeoutSeconds: 120 };

  it("names the allowed hosts, the proxy already set, what fails, and that refusals are reported", () => {
    const prompt = buildSystemPrompt({
      ...base,
      network: "allowlist",
      allowHosts: ["registry.example.com:443", "*.example.org:443,80"],
    });
    for (const fact of [
      "Network access is limited to these hosts: registry.example.com:443, *.example.org:443,80.",
      "HTTPS_PROXY",
      "already configured",
      "raw sockets",
      "DNS lookups",
      "the command's result says so with the host and the reason",
      "do not retry",
    ]) {
      expect(prompt).toContain(fact);
    }
    expect(prompt).not.toContain('network mode "none"');
  });

  it("names each secret's variable and host, says it is a placeholder, only when there are secrets", () => {
    const prompt = buildSystemPrompt({
      ...base,
      network: "allowlist",
      allowHosts: ["api.example.com:443,80"],
      secrets: ["API_TOKEN@api.example.com:443,80"],
    });
    expect(prompt).toContain("$API_TOKEN (for api.example.com:443,80) hold placeholders");
    expect(prompt).toContain("on requests to that host only");
    expect(buildSystemPrompt({ ...base, network: "allowlist", allowHosts: ["a.example.com"] })).not.toContain(
      "placeholders",
    );
  });

  it("says how many names a wildcard entry lets the proxy look up, only when there is one", () => {
    const line = "Under a *. entry the proxy looks up at most 64 distinct names per run";
    const withWildcard = { ...base, network: "allowlist", wildcardNames: 64 };
    expect(buildSystemPrompt({ ...withWildcard, allowHosts: ["*.example.org:443,80"] })).toContain(line);
    expect(buildSystemPrompt({ ...withWildcard, allowHosts: ["example.org:443,80"] })).not.toContain(line);
  });

  it("keeps the other modes' lines when there is no allowlist", () => {
    expect(buildSystemPrompt({ ...base, network: "none" })).not.toContain("HTTPS_PROXY");
    expect(buildSystemPrompt({ ...base, network: "bridge" })).toContain(
      'Network access is enabled (network mode "bridge")',
    );
  });
});
