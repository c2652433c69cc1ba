import { describe, expect, it } from "vitest";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { formatExecResult } from "../../../src/tools/format-exec-result.js";
import { FakeSandbox, makeExecResult } from "../../support/fake-sandbox.js";

const reason = "not on the allowlist (--allow-host evil.example.net would allow it)";

describe("formatExecResult: refused network requests", () => {
  it("says nothing about the network when nothing was refused", () => {
    expect(formatExecResult(makeExecResult({ stdout: "ok\n", egressDenied: [] }))).not.toContain("Network");
    expect(formatExecResult(makeExecResult({ stdout: "ok\n" }))).not.toContain("Network");
  });

  it("adds one note per refused host, with its port and the gateway's reason", () => {
    const text = formatExecResult(
      makeExecResult({
        exitCode: 56,
        stderr: "curl: (56) CONNECT tunnel failed, response 403\n",
        egressDenied: [
          { host: "evil.example.net", port: 443, reason },
          { host: "evil.example.net", port: 443, reason },
          { host: "evil.example.net", port: 8443, reason: "port 8443 is not allowed" },
          { host: "203.0.113.7", port: 80, reason: "IP addresses are refused unless listed exactly" },
        ],
      }),
    );
    const notes = text.split("\n").filter((line) => line.startsWith("<note>Network:"));
    expect(notes).toEqual([
      `<note>Network: the request to evil.example.net:443 was refused by harness's gateway: ${reason}</note>`,
      "<note>Network: the request to 203.0.113.7:80 was refused by harness's gateway: IP addresses are refused unless listed exactly</note>",
    ]);
    expect(text.indexOf("<exit_code>56</exit_code>")).toBeLessThan(text.indexOf("<note>Network"));
  });

  it("caps the notes for a command that tries many hosts, and shows controls as escapes", () => {
    const egressDenied = Array.from({ length: 12 }, (_, i) => ({
      host: i === 0 ? "a\u001b]52;c;x\u0007\nb.example" : `h${i}.example`,
      port: 443,
      reason,
    }));
    const text = formatExecResult(makeExecResult({ egressDenied }));
    const notes = text.split("\n").filter((line) => line.startsWith("<note>Network:"));
    expect(notes).toHaveLength(6);
    expect(notes[0]).toContain("a\\x1b]52;c;x\\x07 b.example:443");
    expect(notes.at(-1)).toBe(
      "<note>Network: requests to 7 more hosts were refused by harness's gateway too.</note>",
    );
  });
});

describe("createBashTool: the call's id", () => {
  it("passes the tool call's id to the sandbox, so network records name the call", async () => {
    const sandbox = new FakeSandbox([{}, {}]);
    const tool = createBashTool(sandbox, { timeoutMs: 1000 });
    await tool.run(tool.parse({ command: "curl https://example.com" }), { callId: "toolu_1" });
    await tool.run(tool.parse({ command: "true" }), {});
    expect(sandbox.calls[0]?.options.callId).toBe("toolu_1");
    expect(sandbox.calls[1]?.options).not.toHaveProperty("callId");
  });

  it("tells the model about a refusal in the result it gets", async () => {
    const denied = [{ host: "evil.example.net", port: 443, reason }];
    const tool = createBashTool(new FakeSandbox([{ exitCode: 6, egressDenied: denied }]), {
      timeoutMs: 1000,
    });
    const output = await tool.run(tool.parse({ command: "curl https://evil.example.net" }), { callId: "t" });
    expect(output.content).toContain("Network: the request to evil.example.net:443 was refused");
  });
});
