/**
 * A `harness run` SIGKILLed mid-call (the OOM killer, `kill -9`): `harness runs` must list it as
 * interrupted, not running, and say what `--resume`/`--continue` will do with it. The same for an
 * `harness mcp` session (a run from its first tool call), which its client holds and harness does not
 * continue.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

let stateHome: string;
beforeEach(() => {
  stateHome = mkdtempSync(join(tmpdir(), "harness-fault-run-state-"));
});
afterEach(() => {
  rmSync(stateHome, { recursive: true, force: true });
});

/** Resolves once `path` exists (the sandbox's command has started); no deadline of its own. */
async function appears(path: string): Promise<void> {
  while (!existsSync(path)) await new Promise((resolve) => setTimeout(resolve, 100));
}

describe.skipIf(skipDocker)("a run killed mid-call", () => {
  const fake = useFakeApi();

  it("is listed as interrupted, with what --resume will do, and --continue goes on with it", async () => {
    using ws = makeWorkspace();
    const env = { ...fake.env, XDG_STATE_HOME: stateHome };
    try {
      fake.api.enqueue(
        toolUseReply("bash", { command: "touch started; sleep 600" }, "Working.", "toolu_long"),
      );
      const run = spawnCli(["run", "--workspace", ws.path, "a long task"], { env });
      await appears(join(ws.path, "started"));
      run.child.kill("SIGKILL");
      await run.done;

      const listed = await runCli(["runs", "--output-format", "json"], { env });
      const [row] = JSON.parse(listed.stdout) as { id: string; status: string; active: boolean }[];
      expect(row).toMatchObject({ status: "interrupted", active: false });
      const table = await runCli(["runs"], { env });
      expect(table.stdout).toMatch(new RegExp(`${row?.id}\\s+(?:just now|\\S+ ago)\\s+interrupted`));
      expect(table.stdout).toContain(
        `interrupted: its harness process is gone (killed) and the run never ended; \`harness run --resume ${row?.id}\``,
      );

      fake.api.enqueue(textReply("Picked up again."));
      const next = await runCli(["run", "--resume", row?.id ?? "", "go on"], { env });
      expect(next.code, next.stderr).toBe(0);
      const after = await runCli(["runs", "--output-format", "json"], { env });
      expect(JSON.parse(after.stdout)).toMatchObject([{ id: row?.id, status: "submitted" }]);
    } finally {
      await removeWorkspaceContainers(ws.path);
    }
  });

  it("an MCP session killed mid-call is listed as interrupted, and says it is not continued", async () => {
    using ws = makeWorkspace();
    const env = { XDG_STATE_HOME: stateHome };
    try {
      const mcp = spawnCli(["mcp", "--workspace", ws.path, "--timeout", "600"], { env, keepStdin: true });
      mcp.child.stdin.on("error", () => {});
      const send = (message: Record<string, unknown>) =>
        mcp.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
      send({
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      });
      send({ method: "notifications/initialized" });
      send({
        id: 2,
        method: "tools/call",
        params: { name: "bash", arguments: { command: "touch started; sleep 600" } },
      });
      await appears(join(ws.path, "started"));
      mcp.child.kill("SIGKILL");
      await mcp.done;

      const listed = await runCli(["runs", "--output-format", "json"], { env });
      const [row] = JSON.parse(listed.stdout) as { id: string; status: string; active: boolean }[];
      expect(row).toMatchObject({ status: "interrupted", active: false });
      const table = await runCli(["runs"], { env });
      expect(table.stdout).toContain(
        `interrupted: ${row?.id} was an MCP session whose harness process is gone`,
      );
      expect(table.stdout).not.toContain("--resume");
    } finally {
      await removeWorkspaceContainers(ws.path);
    }
  });
});
