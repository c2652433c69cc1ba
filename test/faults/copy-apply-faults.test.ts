/**
 * The fault suite for copy mode's apply: harness is SIGKILLed at each step of `exec --isolation copy
 * --apply` (src/faults/fault-point.ts, test-only), then the host is checked: nothing lost, and the
 * next command leaves the workspace entirely old (killed before the commit point) or entirely new
 * (after it), with nothing of harness's left behind.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import {
  applyTask,
  expectedTree,
  own,
  removeCopyContainers,
  snapshotTree,
  stateDirs,
} from "./apply-fixture.js";

const REWRITTEN = 40;
const ADDED = 60;
const DELETED = 10;

/** The task: rewrites old/*, deletes gone/ whole, adds new/*. */
const TASK = applyTask(REWRITTEN, ADDED, "rm -r gone");

function seed(root: string): void {
  for (const dir of ["old", "gone"]) {
    mkdirSync(join(root, dir));
    own(join(root, dir));
  }
  for (let i = 1; i <= REWRITTEN; i++) writeFileSync(join(root, "old", `f${i}`), `old ${i}\n`);
  for (let i = 1; i <= DELETED; i++) writeFileSync(join(root, "gone", `g${i}`), `gone ${i}\n`);
  for (const dir of ["old", "gone"])
    for (const name of readdirSync(join(root, dir))) own(join(root, dir, name));
}

/** Every path with its content, `.harness` included: a staging left behind shows. */
const snapshot = (root: string) => snapshotTree(root);
const expectedNew = () => expectedTree(REWRITTEN, ADDED);
const states = stateDirs("harness-fault-state-");
const stateDir = () => states.make();

afterAll(() => states.removeAll());

/** [fault point, what the next command must leave: the old workspace or the new one] */
const POINTS: [string, "old" | "new"][] = [
  ["apply:staging", "old"],
  ["apply:staged", "old"],
  ["apply:committed", "new"],
  ["apply:deleted", "new"],
  ["apply:placing", "new"],
  ["apply:placed", "new"],
];

describe.skipIf(skipDocker)("copy mode's apply, killed at each step", () => {
  for (const [point, after] of POINTS) {
    it(`SIGKILL at ${point}: nothing is lost, and the next command leaves the ${after} workspace`, async () => {
      using ws = makeWorkspace();
      seed(ws.path);
      const before = snapshot(ws.path);
      const wanted = expectedNew();
      const env = { XDG_STATE_HOME: stateDir() };
      try {
        const killed = await runCli(["exec", "--isolation", "copy", "--apply", "-w", ws.path, "--", TASK], {
          env: { ...env, HARNESS_FAULT_POINT: `${point}:kill` },
        });
        expect(killed.code, killed.stderr).toBeNull();
        expect(killed.stderr).not.toContain("applied to");
        // Nothing lost at the kill itself: every file holds its old or its new content, and git
        // (if the user runs it now) sees nothing of the staging.
        const mid = snapshot(ws.path);
        for (const [path, content] of Object.entries(mid)) {
          if (path.startsWith(".harness")) continue;
          expect([before[path], wanted[path]], path).toContain(content);
        }
        execFileSync("git", ["-c", "safe.directory=*", "init", "-q", ws.path]);
        const status = execFileSync(
          "git",
          ["-c", "safe.directory=*", "-C", ws.path, "status", "--porcelain"],
          {
            encoding: "utf8",
          },
        );
        expect(status).not.toContain(".harness");
        rmSync(join(ws.path, ".git"), { recursive: true, force: true });
        await removeCopyContainers(ws.path);

        // The next command on the workspace finishes or undoes the apply, in one line, before it reads it.
        const next = await runCli(
          ["exec", "--isolation", "copy", "--no-apply", "-w", ws.path, "--", "true"],
          {
            env,
          },
        );
        expect(next.code, next.stderr).toBe(0);
        const line =
          after === "new"
            ? "finished an interrupted copy-mode apply"
            : "rolled back an interrupted copy-mode apply";
        expect(next.stderr).toContain(`harness: ${line} to ${ws.path}`);
        expect(snapshot(ws.path)).toEqual(after === "new" ? wanted : before);
        expect(readdirSync(join(env.XDG_STATE_HOME, "harness", "applies"))).toEqual([]);
      } finally {
        await removeCopyContainers(ws.path);
      }
    });
  }

  it("a staged file changed before the apply is finished is refused, not put in place", async () => {
    using ws = makeWorkspace();
    seed(ws.path);
    const env = { XDG_STATE_HOME: stateDir() };
    try {
      const killed = await runCli(["exec", "--isolation", "copy", "--apply", "-w", ws.path, "--", TASK], {
        env: { ...env, HARNESS_FAULT_POINT: "apply:committed:kill" },
      });
      expect(killed.code, killed.stderr).toBeNull();
      const [staging] = readdirSync(join(ws.path, ".harness"));
      const journal = JSON.parse(
        readFileSync(
          join(env.XDG_STATE_HOME, "harness", "applies", `${staging?.slice("apply-".length)}.json`),
          "utf8",
        ),
      ) as { ops: { kind: string; path: string; staged?: string }[] };
      const first = journal.ops.find((op) => op.kind === "file" && op.path === "old/f1");
      writeFileSync(join(ws.path, ".harness", staging ?? "", first?.staged ?? ""), "planted\n");
      const recovered = await runCli(["recover"], { env });
      expect(recovered.stderr).toContain("old/f1: its staged content changed since it was staged");
      expect(readFileSync(join(ws.path, "old", "f1"), "utf8")).toBe("old 1\n");
      expect(readFileSync(join(ws.path, "old", "f2"), "utf8")).toBe("new 2\n");
    } finally {
      await removeCopyContainers(ws.path);
    }
  });

  it("`harness recover` finishes an apply killed after its commit point, and says when there is nothing to do", async () => {
    using ws = makeWorkspace();
    seed(ws.path);
    const env = { XDG_STATE_HOME: stateDir() };
    try {
      const killed = await runCli(["exec", "--isolation", "copy", "--apply", "-w", ws.path, "--", TASK], {
        env: { ...env, HARNESS_FAULT_POINT: "apply:deleted:kill" },
      });
      expect(killed.code, killed.stderr).toBeNull();
      const recovered = await runCli(["recover"], { env });
      expect(recovered.code).toBe(0);
      expect(recovered.stderr).toBe(
        `harness: finished an interrupted copy-mode apply to ${ws.path}: ${REWRITTEN + ADDED + 1} written, 0 deleted, 0 refused\n`,
      );
      expect(snapshot(ws.path)).toEqual(expectedNew());
      const again = await runCli(["recover"], { env });
      expect(again).toMatchObject({
        code: 0,
        stderr: "harness: no interrupted copy-mode apply to recover\n",
      });
    } finally {
      await removeCopyContainers(ws.path);
    }
  });
});
