/**
 * What the session-end tests (test/e2e/session-end-*.test.ts) plant in a call and check from the host
 * once harness is gone: the nested repository whose config the owner's `git status` would run, moved
 * aside; nothing of the run left in the container; run_end in the transcript.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import type { RunningCli } from "./run-cli.js";
import { makeWorkspace } from "./workspace.js";
import { removeWorkspaceContainers, workspaceContainers, workspaceProcesses } from "./workspace-container.js";

/** The background job a call leaves: the end of the session must end it. */
export const BACKGROUND_JOB = "sleep 9871";
/** The command a call is still running when the session is ended. */
export const RUNNING_COMMAND = "sleep 601";

/**
 * A nested repository whose config runs a command on the owner's next `git status` in it, and a
 * background job; then `STARTED` in the workspace (for the test to wait on).
 */
export function plantCommand(workspace: string): string {
  return [
    "git init -q sub",
    `git -C sub config core.fsmonitor 'touch ${workspace}/RAN'`,
    `{ nohup ${BACKGROUND_JOB} >/dev/null 2>&1 & }`,
    "touch STARTED",
  ].join(" && ");
}

/** `plantCommand`, then a command that runs until harness stops it. */
export function plantAndWait(workspace: string): string {
  return `${plantCommand(workspace)} && ${RUNNING_COMMAND}`;
}

/** A workspace (owned by the test uid) and a directory outside it for the transcript. */
export function sessionWorkspace(): {
  path: string;
  transcript: string;
  [Symbol.asyncDispose](): Promise<void>;
} {
  const ws = makeWorkspace("harness-end-ws-");
  const dir = mkdtempSync(join(tmpdir(), "harness-end-tr-"));
  return {
    path: ws.path,
    transcript: join(dir, "session.jsonl"),
    async [Symbol.asyncDispose]() {
      await removeWorkspaceContainers(ws.path);
      ws[Symbol.dispose]();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once the planting command ran (its `STARTED`), or fails when the CLI exited first. */
export async function untilPlanted(workspace: string, cli?: RunningCli): Promise<void> {
  let exited = false;
  void cli?.done.then(() => {
    exited = true;
  });
  await expect
    .poll(
      () => {
        if (exited) throw new Error(`the CLI exited before planting:\n${cli?.stdout()}\n${cli?.stderr()}`);
        return existsSync(join(workspace, "STARTED"));
      },
      { timeout: 120_000, interval: 100 },
    )
    .toBe(true);
}

/** Host git as its owner would run it, in the planted directory: it must run nothing planted. */
function ownersGitStatus(dir: string): void {
  try {
    execFileSync("git", ["-c", "safe.directory=*", "-C", dir, "status"], { stdio: "ignore" });
  } catch {
    // No repository there any more (moved aside): git says so and runs nothing.
  }
}

/** The records of a JSONL transcript. */
export function transcriptRecords(path: string): Record<string, unknown>[] {
  return readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * From the host, after harness exited: the nested repository moved aside and the owner's `git
 * status` running nothing, no process of the run left in the workspace's container (if it is still
 * there), and, given a transcript, its last record a run_end (with `endedBy` when given).
 */
export async function expectSessionEnded(
  workspace: string,
  check: { transcript?: string; endedBy?: string | undefined } = {},
): Promise<void> {
  expect(existsSync(join(workspace, "sub", ".git")), "the planted repository is still there").toBe(false);
  ownersGitStatus(join(workspace, "sub"));
  expect(existsSync(join(workspace, "RAN")), "the owner's git status ran the plant").toBe(false);
  if ((await workspaceContainers(workspace)).length > 0) {
    const left = (await workspaceProcesses(workspace)).filter(
      (p) => p.includes(BACKGROUND_JOB) || p.includes(RUNNING_COMMAND),
    );
    expect(left, "processes of the run left in the container").toEqual([]);
  }
  if (check.transcript !== undefined) {
    const last = transcriptRecords(check.transcript).at(-1);
    expect(last?.["type"]).toBe("run_end");
    if (check.endedBy !== undefined) expect(last?.["endedBy"]).toBe(check.endedBy);
  }
}

/**
 * NODE_OPTIONS for the CLI: a module that, on SIGUSR2, makes a writer fail with no one listening (an
 * uncaught error, as a bug in any writer would be). harness has no such hook of its own.
 */
export const CRASH_ON_SIGUSR2 = {
  NODE_OPTIONS: `--import ${fileURLToPath(new URL("./writer-error-on-usr2.mjs", import.meta.url))}`,
};
