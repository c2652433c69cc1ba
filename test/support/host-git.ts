/**
 * The host's git as the workspace's owner runs it, for adversarial tests that plant something for
 * it: no protective flags (`core.fsmonitor` and hooks run). `safe.directory=*` only because tests
 * may run as root over a workspace owned by the sandbox user; for the owner it changes nothing.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { TEST_GID, TEST_UID } from "./workspace.js";

export function hostGit(dir: string, args: string[]): string {
  const who = ["-c", "safe.directory=*", "-c", "user.name=host", "-c", "user.email=host@example.invalid"];
  return execFileSync("git", [...who, "-C", dir, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
}

/** Runs host git and ignores its failure: a git that refuses to run is fine, what it ran is checked. */
export function hostGitTry(dir: string, args: string[]): void {
  if (!existsSync(dir)) return;
  try {
    hostGit(dir, args);
  } catch {}
}

/** Gives everything under `path` to the sandbox user when the test runs as root. */
export function chownAll(path: string): void {
  if (process.getuid?.() === 0) execFileSync("chown", ["-R", "-h", `${TEST_UID}:${TEST_GID}`, path]);
}

/** The `RAN-*` markers planted commands leave in `dir`. */
export const ran = (dir: string): string[] => readdirSync(dir).filter((f) => f.startsWith("RAN-"));

/** A shell command printing a config whose core.fsmonitor touches `marker`. */
export const fsmonitorConfig = (marker: string): string =>
  `printf '[core]\\n\\tfsmonitor = touch ${marker}\\n'`;
