/**
 * The end of the session in the other long-lived commands (`exec`, `shell`, `replay`, `batch`): each
 * way that ends one runs the same end as SIGTERM (src/cli/session/). A command plants a nested
 * repository whose config the owner's `git status` would run and leaves a background job; the host
 * then sees the repository moved aside, `git status` running nothing, nothing of the run left in
 * the container, and a meaningful exit code. The built CLI, the real Docker sandbox.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { spawnCli } from "../support/run-cli.js";
import {
  CRASH_ON_SIGUSR2,
  expectSessionEnded,
  plantAndWait,
  RUNNING_COMMAND,
  sessionWorkspace,
  transcriptRecords,
  untilPlanted,
} from "../support/session-end-fixture.js";
import { workspaceContainers } from "../support/workspace-container.js";

const EXAMPLE = fileURLToPath(new URL("../../examples/hello/transcript.jsonl", import.meta.url));

describe.skipIf(skipDocker)(
  "the end of the session in exec, shell, replay and batch",
  { timeout: 300_000 },
  () => {
    it.each([
      ["SIGTERM", 143],
      ["SIGHUP", 129],
      ["SIGINT", 130],
    ] as const)("harness exec, %s while the command runs: exit %d", async (signal, code) => {
      await using ws = sessionWorkspace();
      const cli = spawnCli(["exec", "--workspace", ws.path, "--", plantAndWait(ws.path)], {
        timeoutMs: 240_000,
      });
      await untilPlanted(ws.path, cli);
      cli.child.kill(signal);
      const run = await cli.done;
      await expectSessionEnded(ws.path);
      expect(run.code, run.stderr).toBe(code);
    });

    it("harness exec, stdout's reader gone while the command runs: exit 141", async () => {
      await using ws = sessionWorkspace();
      const command = `${plantAndWait(ws.path).replace(RUNNING_COMMAND, `sleep 1 && echo tick && ${RUNNING_COMMAND}`)}`;
      const cli = spawnCli(["exec", "--workspace", ws.path, "--", command], { timeoutMs: 240_000 });
      await untilPlanted(ws.path, cli);
      cli.child.stdout.destroy();
      const run = await cli.done;
      await expectSessionEnded(ws.path);
      expect(run.code, run.stderr).toBe(141);
    });

    it("harness exec, an uncaught writer error while the command runs: the forced end, exit 1", async () => {
      await using ws = sessionWorkspace();
      const cli = spawnCli(["exec", "--workspace", ws.path, "--", plantAndWait(ws.path)], {
        timeoutMs: 240_000,
        env: CRASH_ON_SIGUSR2,
      });
      await untilPlanted(ws.path, cli);
      cli.child.kill("SIGUSR2");
      const run = await cli.done;
      await expectSessionEnded(ws.path);
      expect(run.code, run.stderr).toBe(1);
    });

    it.each([
      ["SIGHUP", 129],
      ["SIGTERM", 143],
    ] as const)("harness shell, %s while a command runs in it: exit %d", async (signal, code) => {
      await using ws = sessionWorkspace();
      const cli = spawnCli(["shell", "--workspace", ws.path], {
        terminal: true,
        keepStdin: true,
        input: `${plantAndWait(ws.path)}\n`,
        timeoutMs: 240_000,
      });
      await untilPlanted(ws.path, cli);
      cli.child.kill(signal);
      const run = await cli.done;
      await expectSessionEnded(ws.path);
      expect(run.code, run.stderr).toBe(code);
    });

    it("harness shell, its stdin closed (the shell exits): the end runs", async () => {
      await using ws = sessionWorkspace();
      const cli = spawnCli(["shell", "--workspace", ws.path], {
        terminal: true,
        keepStdin: true,
        input: `${plantAndWait(ws.path).replace(` && ${RUNNING_COMMAND}`, "")}\n`,
        timeoutMs: 240_000,
      });
      await untilPlanted(ws.path, cli);
      cli.child.stdin.end();
      await cli.done;
      await expectSessionEnded(ws.path);
    });

    it("harness replay, SIGTERM while a replayed call runs: exit 143, the container removed", async () => {
      await using ws = sessionWorkspace();
      const dir = mkdtempSync(join(tmpdir(), "harness-end-replay-"));
      try {
        // The hello example, its second call now one that plants and waits.
        // (No quote or backslash in it: it goes into the JSON strings as it is.)
        const recorded = readFileSync(EXAMPLE, "utf8").replaceAll("python3 hello.py", plantAndWait(ws.path));
        const transcript = join(dir, "planted.jsonl");
        writeFileSync(transcript, recorded);
        const cli = spawnCli(["replay", "--workspace", ws.path, transcript], { timeoutMs: 240_000 });
        await untilPlanted(ws.path, cli);
        cli.child.kill("SIGTERM");
        const run = await cli.done;
        await expectSessionEnded(ws.path);
        expect(run.code, run.stderr).toBe(143);
        expect(await workspaceContainers(ws.path)).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    describe("harness batch", () => {
      const fake = useFakeApi();

      it("SIGHUP while a task's command runs: exit 129, its run_end says so, its container removed", async () => {
        await using ws = sessionWorkspace();
        const dir = mkdtempSync(join(tmpdir(), "harness-end-batch-"));
        try {
          const tasks = join(dir, "tasks.jsonl");
          writeFileSync(tasks, `${JSON.stringify({ id: "plant", workspace: ws.path, task: "plant" })}\n`);
          fake.api.enqueue(toolUseReply("bash", { command: plantAndWait(ws.path) }), textReply("done"));
          const cli = spawnCli(["batch", tasks, "--timeout", "600"], { env: fake.env, timeoutMs: 240_000 });
          await untilPlanted(ws.path, cli);
          cli.child.kill("SIGHUP");
          const run = await cli.done;
          const transcript = join(dir, "tasks.results.transcripts", "plant.jsonl");
          await expectSessionEnded(ws.path, { transcript, endedBy: "SIGHUP" });
          expect(run.code, run.stderr).toBe(129);
          expect(transcriptRecords(transcript).at(-1)).toMatchObject({ status: "canceled" });
          expect(await workspaceContainers(ws.path)).toEqual([]);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
    });
  },
);
