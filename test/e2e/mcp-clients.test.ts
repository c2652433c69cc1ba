/**
 * What a person (and the model) sees of `harness mcp` in the hands of an MCP client: the built CLI,
 * the MCP SDK's own client over stdio (as Claude Code, an editor or a program drives it), the real
 * Docker sandbox, and a state directory of the test's own, so that `harness runs` shows exactly the
 * runs these sessions left.
 *
 * - A result reads as text: the text `harness run` gives the model, no JSON a host would show instead;
 *   with `--structured-content`, fields valid against the declared schema, the output id when cut.
 * - Calls sent together run one after another, while the connection answers other requests.
 * - A connection that only lists the tools (a client's health check) leaves no run; a session with a
 *   call is a run with a checkpoint per call, and `run --continue` after it refuses in one line.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { CLI_PATH, runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

interface Session {
  client: Client;
  stderr: () => string;
  /** Closes the client's end (stdin, then the SDK's SIGTERM) and waits for harness to exit. */
  close: () => Promise<void>;
}

async function openSession(workspace: string, stateHome: string, extra: string[] = []): Promise<Session> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_PATH, "mcp", "--workspace", workspace, "--timeout", "60", ...extra],
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "/root",
      XDG_STATE_HOME: stateHome,
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
  const pid = transport.pid;
  return {
    client,
    stderr: () => stderr,
    close: async () => {
      await client.close();
      // Called from afterAll too, where expect.poll cannot be.
      for (let i = 0; pid !== null && alive(pid); i++) {
        if (i > 600) throw new Error(`harness (pid ${pid}) did not exit after its client closed`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function call(session: Session, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await session.client.callTool({ name, arguments: args }, undefined, {
    timeout: 120_000,
  })) as CallToolResult;
}

/** The one text block a host shows, checked to be the whole of the content. */
function textOf(result: CallToolResult): string {
  expect(result.content).toHaveLength(1);
  const [block] = result.content;
  expect(block?.type).toBe("text");
  return block?.type === "text" ? block.text : "";
}

const runsOf = (stateHome: string) => join(stateHome, "harness", "runs");

type Row = Record<string, unknown> & { type: string };
const rows = (path: string): Row[] =>
  readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Row);

describe.skipIf(skipDocker)("harness mcp for a client that only looks", { timeout: 180_000 }, () => {
  it("leaves no run when the client only initializes and lists the tools (a health check)", async () => {
    using ws = makeWorkspace();
    const stateHome = mkdtempSync(join(tmpdir(), "harness-mcp-state-"));
    try {
      const session = await openSession(ws.path, stateHome);
      expect((await session.client.listTools()).tools.length).toBe(5);
      await session.client.ping();
      await session.close();
      const left = existsSync(runsOf(stateHome)) ? readdirSync(runsOf(stateHome)) : [];
      expect(left).toEqual([]);
      expect(session.stderr()).toContain("no tool was called, so it left no run");
      const runs = await runCli(["runs"], { env: { XDG_STATE_HOME: stateHome } });
      expect(runs.stdout).toContain("no runs in");
    } finally {
      await runCli(["rm", "--workspace", ws.path]);
      rmSync(stateHome, { recursive: true, force: true });
    }
  });
});

describe.skipIf(skipDocker)("harness mcp as a host shows it", { timeout: 240_000 }, () => {
  const ws = makeWorkspace();
  const stateHome = mkdtempSync(join(tmpdir(), "harness-mcp-state-"));
  let session: Session;
  let calls = 0;
  const counted = async (name: string, args: Record<string, unknown>) => {
    calls += 1;
    return call(session, name, args);
  };

  beforeAll(async () => {
    session = await openSession(ws.path, stateHome);
  }, 180_000);

  afterAll(async () => {
    await session?.close();
    await runCli(["rm", "--workspace", ws.path]);
    ws[Symbol.dispose]();
    rmSync(stateHome, { recursive: true, force: true });
  });

  it("answers bash with the text harness run gives the model, and no structured content to show instead", async () => {
    const { tools } = await session.client.listTools();
    expect(tools.find((tool) => tool.name === "bash")?.outputSchema).toBeUndefined();
    const result = await counted("bash", {
      command: "printf 'one\\ntwo\\n' > two.txt; cat two.txt; echo err >&2; exit 3",
    });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(textOf(result)).toBe(
      "<stdout>\none\ntwo\n</stdout>\n<stderr>\nerr\n</stderr>\n<exit_code>3</exit_code>",
    );
  });

  it.each([
    ["a successful", "seq 1 200000", 0],
    ["a failed", "seq 1 200000; exit 2", 2],
  ])("names the saved output's id when %s command's output was cut", async (_what, command, code) => {
    const result = await counted("bash", { command });
    const text = textOf(result);
    expect(text).toContain(`<exit_code>${code}</exit_code>`);
    const id = /The full output was saved as (out-\d+) \(stdout: 1,288,895 bytes\)/.exec(text)?.[1];
    expect(id, text.slice(-400)).toBeDefined();
    const page = await counted("read_output", { id, grep: "^123456$" });
    expect(page.isError).toBe(false);
    expect(textOf(page)).toMatch(/123456/);
  });

  it("runs calls sent together one after another, in order, and answers other requests meanwhile", async () => {
    const log = join(ws.path, "order.log");
    const marker = (name: string, wait: string) =>
      `echo ${name}-start >> order.log; ${wait} echo ${name}-end >> order.log; echo ${name}`;
    const finished: string[] = [];
    const first = counted("bash", {
      command: marker("A", "while [ ! -e go ]; do sleep 0.1; done;"),
    }).then((r) => finished.push(textOf(r)));
    const second = counted("bash", { command: marker("B", "") }).then((r) => finished.push(textOf(r)));
    await expect
      .poll(() => existsSync(log) && readFileSync(log, "utf8"), { timeout: 60_000 })
      .toBe("A-start\n");
    // A ping and a listing are answered while A runs and B waits for its turn.
    await session.client.ping();
    expect((await session.client.listTools()).tools.length).toBe(5);
    expect(readFileSync(log, "utf8")).toBe("A-start\n");
    writeFileSync(join(ws.path, "go"), "");
    await Promise.all([first, second]);
    expect(readFileSync(log, "utf8")).toBe("A-start\nA-end\nB-start\nB-end\n");
    expect(finished).toEqual(
      ["A", "B"].map((name) => `<stdout>\n${name}\n</stdout>\n<exit_code>0</exit_code>`),
    );
  });

  it("is a run in harness runs with a checkpoint per call, which run --continue refuses in one line", async () => {
    await session.close();
    const env = { XDG_STATE_HOME: stateHome };
    const listed = await runCli(["runs", "--output-format", "json"], { env });
    const runs = JSON.parse(listed.stdout) as Array<{ id: string; task: string; status: string }>;
    expect(runs).toHaveLength(1);
    const [run] = runs;
    expect(run).toMatchObject({ task: expect.stringContaining("MCP session"), status: "submitted" });
    const id = run?.id ?? "";
    const records = rows(join(runsOf(stateHome), `${id}.jsonl`));
    const steps = records.filter((row) => row.type === "checkpoint").map((row) => row["step"]);
    expect(steps).toEqual(Array.from({ length: calls + 1 }, (_, step) => step));
    const diff = await runCli(["runs", "diff", id, "--step", "1"], { env });
    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout).toContain("+++ b/two.txt\n");

    const continued = await runCli(["run", "--continue", "--workspace", ws.path, "go on"], {
      env: { ...env, ANTHROPIC_API_KEY: "sk-test", MODEL_ID: "claude-test" },
    });
    expect(continued.code).toBe(2);
    expect(continued.stderr).toBe(
      `harness: --continue: run ${id} is an MCP session: its tool calls came from an MCP client, whose own model holds the conversation, so harness has none to continue; start a new run (without --continue) on the workspace as the session left it, or resume an agent run (harness runs lists them)\n`,
    );
  });
});

describe.skipIf(skipDocker)("harness mcp --structured-content", { timeout: 240_000 }, () => {
  const ws = makeWorkspace();
  const stateHome = mkdtempSync(join(tmpdir(), "harness-mcp-state-"));
  let session: Session;
  let bash: Tool | undefined;

  beforeAll(async () => {
    session = await openSession(ws.path, stateHome, ["--structured-content"]);
    bash = (await session.client.listTools()).tools.find((tool) => tool.name === "bash");
  }, 180_000);

  afterAll(async () => {
    await session?.close();
    await runCli(["rm", "--workspace", ws.path]);
    ws[Symbol.dispose]();
    rmSync(stateHome, { recursive: true, force: true });
  });

  /** A bash call's result, its text first and its structured part checked against the declared schema. */
  async function structured(args: Record<string, unknown>): Promise<[string, Record<string, unknown>]> {
    const result = await call(session, "bash", args);
    expect(result.content[0]?.type).toBe("text");
    const valid = new AjvJsonSchemaValidator().getValidator((bash?.outputSchema ?? {}) as JsonSchemaType);
    expect(valid(result.structuredContent)).toMatchObject({ valid: true });
    const text = result.content[0]?.type === "text" ? result.content[0].text : "";
    return [text, result.structuredContent ?? {}];
  }

  it("declares the output schema, and answers with the same text first and valid fields", async () => {
    expect(bash?.outputSchema).toMatchObject({
      type: "object",
      required: expect.arrayContaining(["exitCode"]),
    });
    const [text, fields] = await structured({ command: "echo out; echo err >&2; exit 3" });
    expect(text).toBe("<stdout>\nout\n</stdout>\n<stderr>\nerr\n</stderr>\n<exit_code>3</exit_code>");
    expect(fields).toMatchObject({ stdout: "out\n", stderr: "err\n", exitCode: 3, truncated: false });
    expect(fields).not.toHaveProperty("outputId");
  });

  it.each([
    ["a successful", "seq 1 200000", 0],
    ["a failed", "seq 1 200000; exit 2", 2],
  ])("gives the output id when %s command's output was cut", async (_what, command, exitCode) => {
    const [text, fields] = await structured({ command });
    expect(fields).toMatchObject({
      exitCode,
      truncated: true,
      stdoutBytes: 1288895,
      outputId: expect.stringMatching(/^out-\d+$/),
    });
    expect(text).toContain(`saved as ${String(fields["outputId"])} (stdout`);
    const page = await call(session, "read_output", { id: fields["outputId"], grep: "^200000$" });
    expect(page.isError).toBe(false);
  });

  it("answers a command killed on its timeout with fields valid against the schema", async () => {
    const [text, fields] = await structured({ command: "echo partial; sleep 60", timeout: 1 });
    expect(text).toContain("timed out after 1000 milliseconds");
    expect(fields).toMatchObject({ stdout: "partial\n", timedOut: true, canceled: false });
    expect(fields["exitCode"] === null || Number.isInteger(fields["exitCode"])).toBe(true);
  });
});
