/**
 * A `harness run` SIGKILLed mid-call (the OOM killer, `kill -9`): `harness runs` must list it as
 * interrupted, not running, and say what `--resume`/`--continue` will do with it.
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
});
