/**
 * The sandbox's work outlives harness until it lands or the user drops it (docs/copy-mode.md,
 * "Kept copies"): harness is SIGKILLed during `exec --isolation copy --apply` before the apply's
 * commit point (src/faults/fault-point.ts, test-only), then the host checks that the next copy-mode
 * command keeps the copy, that `harness ps` lists it, and that `harness apply ID` lands exactly the
 * sandbox's changes and removes it. Also: a session without --apply off a terminal keeps its copy,
 * `harness rm ID` drops one, `--no-apply` drops it at once.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { claimJournal, keptCopyClaimId } from "../../src/sandbox/copy/journal/journal-claim.js";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import {
  applyTask,
  copyContainers,
  expectedTree,
  own,
  removeCopyContainers,
  snapshotTree,
  stateDirs,
} from "./apply-fixture.js";

const REWRITTEN = 30;
const ADDED = 40;

/** The task: rewrites old/*, deletes gone.txt, adds new/*. */
const TASK = applyTask(REWRITTEN, ADDED, "rm gone.txt");

function seed(root: string): void {
  mkdirSync(join(root, "old"));
  own(join(root, "old"));
  for (let i = 1; i <= REWRITTEN; i++) {
    writeFileSync(join(root, "old", `f${i}`), `old ${i}\n`);
    own(join(root, "old", `f${i}`));
  }
  writeFileSync(join(root, "gone.txt"), "gone\n");
  own(join(root, "gone.txt"));
}

/** Every path with its content; harness's own `.harness` left out. */
const snapshot = (root: string) => snapshotTree(root, ".harness");
const expectedNew = () => expectedTree(REWRITTEN, ADDED);
const states = stateDirs("harness-kept-state-");
const stateDir = () => states.make();

afterAll(() => states.removeAll());

describe.skipIf(skipDocker)("kept copies: the sandbox's work outlives harness", () => {
  it("SIGKILL before the apply's commit point: the next copy-mode command keeps the copy, ps lists it, apply ID lands it whole", async () => {
    using ws = makeWorkspace();
    seed(ws.path);
    const before = snapshot(ws.path);
    const env = { XDG_STATE_HOME: stateDir() };
    try {
      const killed = await runCli(["exec", "--isolation", "copy", "--apply", "-w", ws.path, "--", TASK], {
        env: { ...env, HARNESS_FAULT_POINT: "apply:staged:kill" },
      });
      expect(killed.code, killed.stderr).toBeNull();
      const [copy] = await copyContainers(ws.path);
      const id = copy?.Labels["dev.harness.copy-id"];

      // The next copy-mode command (of any workspace: this one) rolls the staging back and sweeps
      // orphaned copies, but not this one: it may hold work that never landed.
      const next = await runCli(["exec", "--isolation", "copy", "--no-apply", "-w", ws.path, "--", "true"], {
        env,
      });
      expect(next.code, next.stderr).toBe(0);
      expect(next.stderr).toContain(`harness: rolled back an interrupted copy-mode apply to ${ws.path}`);
      const left = await copyContainers(ws.path);
      expect(left.map((c) => c.Id)).toEqual([copy?.Id]);
      expect(left[0]?.State).not.toBe("running");
      expect(id).toMatch(/^exec-/);
      expect(snapshot(ws.path)).toEqual(before);

      const ps = await runCli(["ps"], { env });
      expect(ps.code, ps.stderr).toBe(0);
      expect(ps.stdout).toContain("kept copies (the sandbox's changes, not applied):");
      const row = ps.stdout.split("\n").find((line) => line.startsWith(`${id} `));
      expect(row, ps.stdout).toContain(ws.path);
      expect(row).toContain(`harness apply ${id} / harness rm ${id}`);

      // Off a terminal and without --yes: reviewed, not applied, still kept.
      const asked = await runCli(["apply", id ?? ""], { env });
      expect(asked.code).toBe(1);
      expect(asked.stderr).toContain("changes not applied (pass --yes to apply them)");
      expect(asked.stderr).toContain(`the copy stays kept as ${id}`);
      expect(snapshot(ws.path)).toEqual(before);

      // While another `harness apply` of it runs (its claim held here): refused in one line.
      const other = await claimJournal(keptCopyClaimId(id ?? ""), env);
      const raced = await runCli(["apply", id ?? "", "--yes"], { env });
      await other?.release();
      expect(raced.code).not.toBe(0);
      expect(raced.stderr).toContain(`another harness apply of ${id} is running`);
      expect(snapshot(ws.path)).toEqual(before);

      const applied = await runCli(["apply", id ?? "", "--yes"], { env });
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stderr).toContain(
        `${REWRITTEN + ADDED + 2} changes: ${ADDED + 1} added, ${REWRITTEN} modified, 1 deleted\n`,
      );
      expect(applied.stderr).toContain(
        `harness: applied to ${ws.path}: ${REWRITTEN + ADDED + 1} written, 1 deleted, 0 refused\n`,
      );
      expect(applied.stderr).toContain(`harness: removed the kept copy ${id}: its changes are applied\n`);
      // Exactly the sandbox's changes, every file wholly new.
      expect(snapshot(ws.path)).toEqual(expectedNew());
      expect(await copyContainers(ws.path)).toEqual([]);
      expect(existsSync(join(env.XDG_STATE_HOME, "harness", "copies", `${id}.json`))).toBe(false);
      expect(readdirSync(join(env.XDG_STATE_HOME, "harness", "applies"))).toEqual([]);
    } finally {
      await removeCopyContainers(ws.path);
    }
  });

  it("SIGKILL before the review, the sandbox still running: the next copy-mode command stops the copy and keeps it", async () => {
    using ws = makeWorkspace();
    seed(ws.path);
    const env = { XDG_STATE_HOME: stateDir() };
    try {
      // The task leaves a process behind that would go on changing the copy.
      const task = `${TASK}; (while true; do sleep 1; done) >/dev/null 2>&1 &`;
      const killed = await runCli(["exec", "--isolation", "copy", "-w", ws.path, "--", task], {
        env: { ...env, HARNESS_FAULT_POINT: "review:start:kill" },
      });
      expect(killed.code, killed.stderr).toBeNull();
      const [copy] = await copyContainers(ws.path);
      expect(copy?.State).toBe("running");
      const id = copy?.Labels["dev.harness.copy-id"];
      const other = makeWorkspace();
      try {
        // A copy-mode command on another workspace sweeps every workspace's orphaned copies.
        const next = await runCli(
          ["exec", "--isolation", "copy", "--no-apply", "-w", other.path, "--", "true"],
          {
            env,
          },
        );
        expect(next.code, next.stderr).toBe(0);
      } finally {
        await removeCopyContainers(other.path);
        other[Symbol.dispose]();
      }
      const [left] = await copyContainers(ws.path);
      expect(left?.Id).toBe(copy?.Id);
      expect(left?.State).toBe("exited");
      const applied = await runCli(["apply", id ?? "", "--yes"], { env });
      expect(applied.code, applied.stderr).toBe(0);
      expect(snapshot(ws.path)).toEqual(expectedNew());
      expect(await copyContainers(ws.path)).toEqual([]);
    } finally {
      await removeCopyContainers(ws.path);
    }
  });

  it("a session without --apply off a terminal keeps its copy; harness rm ID drops it", async () => {
    using ws = makeWorkspace();
    seed(ws.path);
    const before = snapshot(ws.path);
    const env = { XDG_STATE_HOME: stateDir() };
    try {
      const run = await runCli(["exec", "--isolation", "copy", "-w", ws.path, "--", TASK], { env });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain("changes not applied (pass --apply to apply them)\n");
      const id =
        /the sandbox's copy is kept as (\S+): harness apply \1 lands its changes, harness rm \1 drops them\n/.exec(
          run.stderr,
        )?.[1];
      expect(id, run.stderr).toMatch(/^exec-/);
      const [kept] = await copyContainers(ws.path);
      expect(kept?.Labels["dev.harness.copy-id"]).toBe(id);
      expect(kept?.State).toBe("exited");

      // `harness rm` of the workspace leaves a kept copy; only `harness rm ID` drops it.
      const rmAll = await runCli(["rm", "-w", ws.path], { env });
      expect(rmAll.stdout).toContain(`left the kept copy ${id}`);
      expect(await copyContainers(ws.path)).toHaveLength(1);

      const rm = await runCli(["rm", id ?? ""], { env });
      expect(rm.code, rm.stderr).toBe(0);
      expect(rm.stdout).toBe(`removed the kept copy ${id} (${ws.path}): its changes are dropped\n`);
      expect(await copyContainers(ws.path)).toEqual([]);
      expect(existsSync(join(env.XDG_STATE_HOME, "harness", "copies", `${id}.json`))).toBe(false);
      expect(snapshot(ws.path)).toEqual(before);
      const again = await runCli(["apply", id ?? ""], { env });
      expect(again.code).toBe(2);
      expect(again.stderr).toContain(`no kept copy '${id}'`);
    } finally {
      await removeCopyContainers(ws.path);
    }
  });

  it("harness apply ID keeps the refusals: what the user changed on the host meanwhile is never overwritten", async () => {
    using ws = makeWorkspace();
    seed(ws.path);
    const env = { XDG_STATE_HOME: stateDir() };
    try {
      const run = await runCli(["exec", "--isolation", "copy", "-w", ws.path, "--", TASK], { env });
      expect(run.code, run.stderr).toBe(0);
      const id = /the sandbox's copy is kept as (\S+):/.exec(run.stderr)?.[1];
      // The user edits a file the sandbox rewrote, and creates one, while the copy is kept.
      writeFileSync(join(ws.path, "old", "f1"), "mine\n");
      writeFileSync(join(ws.path, "mine.txt"), "mine\n");
      const applied = await runCli(["apply", id ?? "", "--yes"], { env });
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stderr).toContain(
        "harness: refused old/f1: changed on the host during the run; left as it is\n",
      );
      const wanted = { ...expectedNew(), "old/f1": "mine\n", "mine.txt": "mine\n" };
      expect(snapshot(ws.path)).toEqual(wanted);
      expect(await copyContainers(ws.path)).toEqual([]);
    } finally {
      await removeCopyContainers(ws.path);
    }
  });

  it("--no-apply drops the copy at the session's end", async () => {
    using ws = makeWorkspace();
    seed(ws.path);
    const env = { XDG_STATE_HOME: stateDir() };
    try {
      const run = await runCli(["exec", "--isolation", "copy", "--no-apply", "-w", ws.path, "--", TASK], {
        env,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain("changes not applied (--no-apply); the sandbox's copy is dropped\n");
      expect(run.stderr).not.toContain("kept as");
      expect(await copyContainers(ws.path)).toEqual([]);
      expect(readdirSync(join(env.XDG_STATE_HOME, "harness", "copies"))).toEqual([]);
    } finally {
      await removeCopyContainers(ws.path);
    }
  });
});
