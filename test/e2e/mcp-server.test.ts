/**
 * `harness mcp` through the built CLI, driven by the MCP SDK's own client over stdio, as Claude Code
 * or an editor would: the tools run in the real Docker sandbox, and the transcript records them.
 */
import { createHash } from "node:crypto";
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { freePort } from "../support/publish-client.js";
import { CLI_PATH, runCli } from "../support/run-cli.js";
import { makeWorkspace, TEST_UID } from "../support/workspace.js";

interface Session {
  client: Client;
  stderr: () => string;
  close: () => Promise<void>;
}

async function openSession(workspace: string, transcript: string, extra: string[] = []): Promise<Session> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_PATH, "mcp", "--workspace", workspace, "--transcript", transcript, ...extra],
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "/root",
      XDG_STATE_HOME: join(tmpdir(), "harness-test-state"),
      ...(process.env["DOCKER_HOST"] ? { DOCKER_HOST: process.env["DOCKER_HOST"] } : {}),
    },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: "harness-e2e", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr, close: () => client.close() };
}

async function call(session: Session, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await session.client.callTool({ name, arguments: args }, undefined, {
    timeout: 120_000,
  })) as CallToolResult;
}

function text(result: CallToolResult): string {
  return result.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe.skipIf(skipDocker)("harness mcp", { timeout: 180_000 }, () => {
  const ws = makeWorkspace();
  const dir = mkdtempSync(join(tmpdir(), "harness-mcp-"));
  const transcript = join(dir, "session.jsonl");
  let session: Session;
  let hostPort = 0;

  beforeAll(async () => {
    mkdirSync(join(ws.path, ".git/hooks"), { recursive: true });
    if (process.getuid?.() === 0) chownSync(join(ws.path, ".git/hooks"), TEST_UID, TEST_UID);
    hostPort = await freePort();
    // A program's client: the structured fields too (mcp-clients.test.ts has the default, text alone).
    session = await openSession(ws.path, transcript, [
      "--timeout",
      "20",
      "--publish",
      `8000:${hostPort}`,
      "--structured-content",
    ]);
  }, 180_000);

  afterAll(async () => {
    await session?.close();
    await runCli(["rm", "--workspace", ws.path]);
    ws[Symbol.dispose]();
    rmSync(dir, { recursive: true, force: true });
  });

  it("initializes as harness and lists the sandbox's tools", async () => {
    expect(session.client.getServerVersion()?.name).toBe("harness");
    expect(session.client.getInstructions()).toContain("/workspace");
    const { tools } = await session.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "background_processes",
      "bash",
      "read_file",
      "read_output",
      "write_file",
    ]);
    expect(tools.find((tool) => tool.name === "bash")?.outputSchema).toBeDefined();
  });

  it("runs bash in the sandbox with stdout, stderr and the exit code apart", async () => {
    const result = await call(session, "bash", { command: "echo out; echo err >&2; id -u; exit 3" });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      stdout: `out\n${TEST_UID}\n`,
      stderr: "err\n",
      exitCode: 3,
      timedOut: false,
      truncated: false,
    });
    expect(text(result)).toContain("<exit_code>3</exit_code>");
    // The sandbox, not the host: no network interface but loopback.
    const net = await call(session, "bash", { command: "ls /sys/class/net" });
    expect(net.structuredContent).toMatchObject({ stdout: "lo\n", exitCode: 0 });
  });

  it("kills a command at its timeout and says so", async () => {
    const result = await call(session, "bash", { command: "echo partial; sleep 60", timeout: 1 });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ stdout: "partial\n", timedOut: true });
    expect(text(result)).toContain("timed out after 1000 milliseconds");
  });

  it("keeps the whole of a cut output readable with read_output", async () => {
    const result = await call(session, "bash", { command: "seq 1 200000" });
    expect(result.structuredContent).toMatchObject({ exitCode: 0, truncated: true, stdoutBytes: 1288895 });
    const id = /saved as (out-\d+)/.exec(text(result))?.[1];
    expect(id).toBeDefined();
    const page = await call(session, "read_output", { id, grep: "^123456$" });
    expect(page.isError).toBe(false);
    expect(text(page)).toMatch(/123456/);
  });

  it("writes a file in the workspace and reads it back, as the sandbox user", async () => {
    const content = 'first line\nit\'s "quoted" $HOME `x` ünïcode\n\nlast line without newline';
    const written = await call(session, "write_file", { path: "sub/dir/note.txt", content });
    expect(written.isError).toBe(false);
    const hostFile = join(ws.path, "sub/dir/note.txt");
    expect(readFileSync(hostFile, "utf8")).toBe(content);
    if (process.getuid?.() === 0) expect(statSync(hostFile).uid).toBe(TEST_UID);
    const read = await call(session, "read_file", { path: "sub/dir/note.txt" });
    expect(read.isError).toBe(false);
    expect(text(read)).toBe(content);
    const part = await call(session, "read_file", {
      path: "/workspace/sub/dir/note.txt",
      start_line: 2,
      end_line: 3,
    });
    expect(text(part)).toBe('it\'s "quoted" $HOME `x` ünïcode\n\n');
    const missing = await call(session, "read_file", { path: "no/such/file" });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain("No such file or directory");
  });

  it("writes a file bigger than one command line can carry", async () => {
    const content = Array.from({ length: 12_000 }, (_, i) => `line ${i} ${"x".repeat(i % 50)}`).join("\n");
    expect(Buffer.byteLength(content)).toBeGreaterThan(300_000);
    const written = await call(session, "write_file", { path: "big.txt", content });
    expect(written.isError).toBe(false);
    const sum = await call(session, "bash", { command: "sha256sum big.txt | cut -d' ' -f1" });
    const expected = createHash("sha256").update(content).digest("hex");
    expect(sum.structuredContent).toMatchObject({ stdout: `${expected}\n` });
  });

  it("refuses to write a protected path, as bash would", async () => {
    const result = await call(session, "write_file", { path: ".git/hooks/pre-commit", content: "evil" });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/Read-only file system|Permission denied/);
    expect(existsSync(join(ws.path, ".git/hooks/pre-commit"))).toBe(false);
  });

  it("lists what runs in the background", async () => {
    const before = await call(session, "background_processes", {});
    expect(text(before)).toBe("Nothing is running in the background.");
    await call(session, "bash", { command: "nohup sleep 321 > /dev/null 2>&1 &" });
    const after = await call(session, "background_processes", {});
    expect(text(after)).toMatch(/^\d+ s\tsleep 321$/m);
    await call(session, "bash", { command: "pkill -f 'sleep 321'; true" });
  });

  it("publishes a server started with bash on the host's loopback (--publish)", async () => {
    writeFileSync(join(ws.path, "page.html"), "<p>served from the sandbox</p>\n");
    await call(session, "bash", {
      command: "nohup python3 -u -m http.server 8000 --bind 127.0.0.1 > /tmp/http.log 2>&1 &",
    });
    // http.server says "Serving HTTP" once it listens. Not bash's /dev/tcp: the blocklist refuses
    // writes to devices, and the GET raced the server's start.
    const up = await call(session, "bash", {
      command: "for i in $(seq 300); do grep -q Serving /tmp/http.log && exit 0; sleep 0.1; done; exit 1",
    });
    expect(up.isError, text(up)).toBe(false);
    const body = await new Promise<string>((resolve, reject) => {
      get(`http://127.0.0.1:${hostPort}/page.html`, (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on("end", () => resolve(text));
      }).on("error", reject);
    });
    expect(body).toBe("<p>served from the sandbox</p>\n");
    expect(session.stderr()).toContain(`sandbox port 8000 published at 127.0.0.1:${hostPort}`);
    // The connection's record comes once its forwarder in the sandbox has ended: before run_end.
    await until(() => readFileSync(transcript, "utf8").includes('"type":"publish"'), "the publish record");
    await call(session, "bash", { command: "pkill -f 'http.server 8000'; true" });
  });

  it("records the session in the transcript, and prints nothing but the protocol on stdout", async () => {
    await session.close();
    await until(() => {
      try {
        return readFileSync(transcript, "utf8").includes('"type":"run_end"');
      } catch {
        return false;
      }
    }, "the transcript's run_end");
    const records = readFileSync(transcript, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records[0]).toMatchObject({
      type: "run_start",
      workspace: ws.path,
      task: expect.stringContaining("MCP"),
    });
    const results = records.filter((record) => record["type"] === "tool_result");
    expect(results).toContainEqual(
      expect.objectContaining({
        name: "bash",
        command: expect.stringContaining("exit 3"),
        exitCode: 3,
        stdout: `out\n${TEST_UID}\n`,
        stderr: "err\n",
      }),
    );
    expect(results).toContainEqual(expect.objectContaining({ name: "bash", timedOut: true }));
    expect(results).toContainEqual(expect.objectContaining({ name: "write_file", isError: false }));
    expect(records).toContainEqual(
      expect.objectContaining({
        type: "publish",
        port: 8000,
        hostPort,
        client: expect.stringMatching(/^127\.0\.0\.1:/),
      }),
    );
    expect(records.at(-1)).toMatchObject({ type: "run_end" });
    expect(session.stderr()).toContain("MCP session ended");
  });
});

describe.skipIf(skipDocker)("harness mcp's stdout", { timeout: 180_000 }, () => {
  it("carries JSON-RPC messages only, and answers calls already sent when stdin closes", async () => {
    using ws = makeWorkspace();
    const dir = mkdtempSync(join(tmpdir(), "harness-mcp-"));
    const requests = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      {
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "bash", arguments: { command: "sleep 1; echo done" } },
      },
    ];
    const run = await runCli(["mcp", "--workspace", ws.path, "--transcript", join(dir, "t.jsonl")], {
      input: requests.map((request) => `${JSON.stringify(request)}\n`).join(""),
    });
    rmSync(dir, { recursive: true, force: true });
    await runCli(["rm", "--workspace", ws.path]);
    expect(run.code).toBe(0);
    const lines = run.stdout.split("\n").filter((line) => line !== "");
    const messages = lines.map(
      (line) => JSON.parse(line) as { jsonrpc: string; id: number; result?: unknown },
    );
    expect(messages.map((message) => [message.jsonrpc, message.id])).toEqual([
      ["2.0", 1],
      ["2.0", 2],
      ["2.0", 3],
    ]);
    expect(messages[2]?.result).toEqual({
      content: [{ type: "text", text: "<stdout>\ndone\n</stdout>\n<exit_code>0</exit_code>" }],
      isError: false,
    });
    expect(run.stderr).toContain("harness: MCP server ready on stdio");
  });
});
