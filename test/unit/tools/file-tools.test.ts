import { describe, expect, it } from "vitest";
import { createBackgroundTool } from "../../../src/tools/background-tool.js";
import { createReadFileTool } from "../../../src/tools/read-file-tool.js";
import { ToolError } from "../../../src/tools/tool.js";
import { createWriteFileTool } from "../../../src/tools/write-file-tool.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";

describe("read_file", () => {
  it("reads with cat, relative paths from the workspace root, the path quoted", async () => {
    const sandbox = new FakeSandbox([{ stdout: "hello\n" }]);
    const tool = createReadFileTool(sandbox, { timeoutMs: 5000 });
    const out = await tool.run(tool.parse({ path: "it's dir/a b.txt" }), {});
    expect(sandbox.commands).toEqual(["cat -- '/workspace/it'\\''s dir/a b.txt'"]);
    expect(out).toMatchObject({ content: "hello\n", isError: false });
  });

  it("reads a line range with sed", async () => {
    const sandbox = new FakeSandbox([{ stdout: "b\n" }]);
    const tool = createReadFileTool(sandbox, { timeoutMs: 5000 });
    await tool.run(tool.parse({ path: "/etc/x", start_line: 2, end_line: 2 }), {});
    await tool.run(tool.parse({ path: "/etc/x", start_line: 5 }), {});
    expect(sandbox.commands).toEqual(["sed -n -- '2,2p' '/etc/x'", "sed -n -- '5,$p' '/etc/x'"]);
  });

  it("answers a failure with the whole result, and refuses bad input", async () => {
    const sandbox = new FakeSandbox([{ stderr: "cat: x: No such file or directory\n", exitCode: 1 }]);
    const tool = createReadFileTool(sandbox, { timeoutMs: 5000 });
    const out = await tool.run(tool.parse({ path: "x" }), {});
    expect(out.isError).toBe(true);
    expect(out.content).toContain("<exit_code>1</exit_code>");
    expect(() => tool.parse({ path: "" })).toThrow(ToolError);
    expect(() => tool.parse({ path: "a\0b" })).toThrow(ToolError);
    expect(() => tool.parse({ path: "a", start_line: 0 })).toThrow(ToolError);
    expect(() => tool.parse({ path: "a", start_line: 3, end_line: 2 })).toThrow(ToolError);
  });
});

describe("write_file", () => {
  it("sends the content base64-encoded, in pieces that fit one argument", async () => {
    const sandbox = new FakeSandbox();
    const tool = createWriteFileTool(sandbox, { timeoutMs: 5000 });
    const content = "é".repeat(60_000); // 120,000 bytes: 160,000 base64 characters, three pieces
    const out = await tool.run(tool.parse({ path: "d/f.txt", content }), {});
    expect(out).toMatchObject({ content: "Wrote 120,000 bytes to /workspace/d/f.txt.", isError: false });
    expect(sandbox.commands).toHaveLength(3);
    expect(sandbox.commands[0]).toMatch(
      /^mkdir -p -- '\/workspace\/d' && printf '%s' '[A-Za-z0-9+/=]+' \| base64 -d > '\/workspace\/d\/f.txt'$/,
    );
    expect(sandbox.commands[2]).toMatch(/\| base64 -d >> '\/workspace\/d\/f.txt'$/);
    const sent = sandbox.commands
      .map((command) => /printf '%s' '([A-Za-z0-9+/=]*)'/.exec(command)?.[1] ?? "")
      .join("");
    expect(Buffer.from(sent, "base64").toString()).toBe(content);
    for (const command of sandbox.commands) expect(command.length).toBeLessThan(128 * 1024);
  });

  it("writes an empty file, and stops at the first failing piece", async () => {
    const empty = new FakeSandbox();
    const tool = createWriteFileTool(empty, { timeoutMs: 5000 });
    await tool.run(tool.parse({ path: "/tmp/e", content: "" }), {});
    expect(empty.commands).toEqual(["mkdir -p -- '/tmp' && printf '%s' '' | base64 -d > '/tmp/e'"]);
    const failing = new FakeSandbox([{ stderr: "Read-only file system\n", exitCode: 1 }]);
    const out = await createWriteFileTool(failing, { timeoutMs: 5000 }).run(
      { path: "/workspace/.env", content: "x".repeat(200_000) },
      {},
    );
    expect(failing.commands).toHaveLength(1);
    expect(out.isError).toBe(true);
    expect(out.content).toContain("Read-only file system");
    expect(() => tool.parse({ path: "a" })).toThrow(ToolError);
  });
});

describe("background_processes", () => {
  it("lists the jobs a no-op command finds still running", async () => {
    const sandbox = new FakeSandbox([
      { background: [{ command: "python3 -m http.server 8000", ageSeconds: 12 }] },
      {},
    ]);
    const tool = createBackgroundTool(sandbox, { timeoutMs: 5000 });
    expect((await tool.run(undefined, {})).content).toBe("12 s\tpython3 -m http.server 8000");
    expect((await tool.run(undefined, {})).content).toBe("Nothing is running in the background.");
    expect(sandbox.commands).toEqual(["true", "true"]);
  });
});
