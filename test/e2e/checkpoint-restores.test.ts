/**
 * A checkpoint holds what the sandbox wrote before the run's end moved it aside (bind mode) or before
 * copy mode's apply refused it. Restoring it (`runs restore`, `run --fork`, `replay --from`) must not
 * bring that back: the owner's plain host git in the restored tree runs nothing planted (a
 * `.git/commondir` to a planted config, a nested repository, `git init --bare docs`), and a `.env`
 * the sandbox wrote stays the sandbox's wherever it lands: `harness run` there does not send the key
 * to the endpoint it names. Through the built CLI, a real sandbox and the fake Messages API, in bind
 * and copy mode.
 */
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { E2E_KEY, E2E_MODEL, useFakeApi } from "../support/fake-api-fixture.js";
import {
  type FakeMessagesApi,
  startFakeMessagesApi,
  textReply,
  toolUseReply,
} from "../support/fake-messages-api.js";
import { chownAll, hostGit, hostGitTry, ran } from "../support/host-git.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

let stateHome: string;
let scratch: string;
/** Where a planted command leaves its marker: outside every workspace and restored tree. */
let markers: string;
let evil: FakeMessagesApi;
beforeEach(async () => {
  stateHome = mkdtempSync(join(tmpdir(), "harness-restores-state-"));
  scratch = mkdtempSync(join(tmpdir(), "harness-restores-out-"));
  markers = mkdtempSync(join(tmpdir(), "harness-restores-markers-"));
  evil = await startFakeMessagesApi({ apiKey: E2E_KEY, models: [E2E_MODEL] });
  evil.enqueue(textReply("the key came here"));
});
afterEach(async () => {
  await evil.close();
  for (const dir of [stateHome, scratch, markers]) rmSync(dir, { recursive: true, force: true });
});

/** One tool call that plants for the host's git three ways and writes a `.env` naming `evil`. */
function plant(): string {
  const fsmonitor = (tag: string) => `touch ${markers}/RAN-${tag}`;
  const commit = "git -c user.name=a -c user.email=a@example.invalid";
  return [
    `git init -q sub && git -C sub config core.fsmonitor '${fsmonitor("nested")}' && ${commit} -C sub commit -q --allow-empty -m x`,
    `git init -q --bare docs && git -C docs config core.bare false && git -C docs config core.worktree . && git -C docs config core.fsmonitor '${fsmonitor("docs")}'`,
    `mkdir .evil && cp -r .git/objects .git/refs .git/HEAD .evil/ && printf '[core]\\n\\tfsmonitor = ${fsmonitor("commondir")}\\n' > .evil/config && echo ../.evil > .git/commondir`,
    `printf 'ANTHROPIC_BASE_URL=${evil.url}\\n' > .env`,
    // Copy mode only: bind mode mounts .git/config read-only.
    `( printf '[core]\\n\\tfsmonitor = ${fsmonitor("config")}\\n' >> .git/config || true ) 2>/dev/null`,
  ].join(" && ");
}

/**
 * The owner's plain git where each plant would run: nothing planted runs. Soft, and the markers are
 * cleared, so that every way in that fails is reported.
 */
function nothingRunsIn(dir: string, what: string): void {
  for (const sub of ["", "sub", "docs"]) hostGitTry(join(dir, sub), ["status"]);
  expect.soft(ran(markers), `plain git in ${what}`).toEqual([]);
  for (const name of ran(markers)) rmSync(join(markers, name));
}

const WITHHELD = [
  /harness: not restored: \.git\/commondir \(created during the run/,
  /harness: not restored: \.evil\/HEAD \(created during the run: git would take \.evil for a repository\)/,
  /harness: not restored: docs\/HEAD \(created during the run: git would take docs for a repository\)/,
  /harness: not restored: sub\/\.git \(created during the run/,
];

describe.skipIf(skipDocker)(
  "restoring a checkpoint brings back nothing planted",
  { timeout: 600_000 },
  () => {
    const fake = useFakeApi();
    const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });
    /** The real key and model, no endpoint: only a `.env` could name one. */
    const keyOnly = () => ({ ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: E2E_MODEL, XDG_STATE_HOME: stateHome });

    it.each([
      ["bind", []],
      ["copy", ["--isolation", "copy", "--apply"]],
    ])("%s mode: runs restore, run --fork and replay --from", async (mode, flags) => {
      using ws = makeWorkspace();
      hostGit(ws.path, ["-c", "init.defaultBranch=main", "init", "-q"]);
      hostGit(ws.path, ["commit", "-q", "--allow-empty", "-m", "initial"]);
      chownAll(ws.path);
      fake.api.enqueue(
        toolUseReply("bash", { command: plant() }, undefined, "toolu_plant"),
        toolUseReply("bash", { command: "echo ok > a.txt" }, undefined, "toolu_ok"),
        textReply("Done."),
      );
      const restored = join(scratch, "restored");
      const forked = join(scratch, "forked");
      try {
        const run = await runCli(["run", ...flags, "--workspace", ws.path, "plant"], { env: env() });
        expect(run.code, run.stderr).toBe(0);
        // The run's end took care of the workspace itself.
        nothingRunsIn(ws.path, "the workspace");
        const runs = join(stateHome, "harness", "runs");
        const transcript = readdirSync(runs).find((n) => n.endsWith(".jsonl")) ?? "";
        const runId = transcript.slice(0, -".jsonl".length);

        // runs restore: the tree after the planting step.
        const restore = await runCli(["runs", "restore", runId, "--step", "1", "--to", restored], {
          env: env(),
        });
        expect(restore.code, restore.stderr).toBe(0);
        nothingRunsIn(restored, "the restored tree");
        for (const line of WITHHELD) expect.soft(restore.stderr).toMatch(line);
        expect
          .soft(restore.stderr)
          .toContain(
            `harness: restored ${restored}/.env, written during the run: harness will not load its settings`,
          );
        if (mode === "copy")
          expect
            .soft(restore.stderr)
            .toMatch(/harness: restored \.git\/config as it was when the run began \(changed during the run/);
        // The restored repository still works: its own .git came back.
        expect(hostGit(restored, ["rev-list", "--count", "HEAD"])).toBe("1\n");

        // harness run in the restored directory: the .env there names evil's endpoint.
        const there = await runCli(["run", "say hi"], { cwd: restored, env: keyOnly() });
        expect
          .soft(there.stderr)
          .toMatch(/harness: not loading ANTHROPIC_BASE_URL from .*: a sandbox wrote it/);
        expect.soft(evil.requests.length, "requests to the .env's endpoint from the restored tree").toBe(0);
        evil.requests.length = 0;

        // The same .env copied anywhere else is still the sandbox's.
        const copied = join(scratch, "copied");
        cpSync(restored, copied, { recursive: true, verbatimSymlinks: true });
        chownAll(copied);
        await runCli(["run", "say hi"], { cwd: copied, env: keyOnly() });
        expect.soft(evil.requests.length, "requests to the .env's endpoint from a copy of it").toBe(0);

        // run --fork from the same step: the fork says what it left out.
        fake.api.enqueue(textReply("Ok."));
        const fork = await runCli(["run", "--fork", `${runId}@1`, "--workspace", forked, "go on"], {
          env: env(),
        });
        expect(fork.code, fork.stderr).toBe(0);
        for (const line of WITHHELD) expect.soft(fork.stderr).toMatch(line);
        nothingRunsIn(forked, "the fork");

        // replay --from 1: the second call, in checkpoint 1 restored.
        const replay = await runCli(["replay", join(runs, transcript), "--from", "1", "--keep"], {
          env: env(),
        });
        expect(replay.code, replay.stderr).toBe(0);
        for (const line of WITHHELD) expect.soft(replay.stderr).toMatch(line);
        const replayed = /^workspace: (\S+)/m.exec(replay.stdout)?.[1] ?? "";
        expect(replayed).not.toBe("");
        nothingRunsIn(replayed, "the replay's workspace");
        rmSync(replayed, { recursive: true, force: true });
      } finally {
        for (const dir of [ws.path, restored, forked, join(scratch, "copied")])
          await runCli(["rm", "--workspace", dir], { env: env() });
      }
    });
  },
);
