/** Runs the built CLI (bin/harness.mjs) as a child process, the way a user or a CI job does. */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const CLI_PATH = fileURLToPath(new URL("../../bin/harness.mjs", import.meta.url));
const PTY_RUN = fileURLToPath(new URL("./pty-run.py", import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string>;
  cwd?: string;
  input?: string;
  timeoutMs?: number;
  /** Variables to leave out of the child's env, even the defaults above (XDG_STATE_HOME…). */
  unset?: string[];
  /** Keep the child's stdin open (after `input`) for the test to write to or close. */
  keepStdin?: boolean;
  /**
   * Give the CLI a terminal for stdin and stdout (test/support/pty-run.py), as a user's shell
   * would: what the test writes is typed into it, signals sent to `child` reach the CLI.
   */
  terminal?: boolean;
}

/** A CLI still running: its process (to send it signals) and its output so far. */
export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout matches `pattern`; rejects if the CLI exits first or `timeoutMs` passes. */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves when the CLI has exited and its output is complete. */
  done: Promise<CliRun>;
}

/**
 * Async on purpose: a fake API server in the test process must keep answering while the CLI runs.
 * The child gets only the env given here (plus PATH and HOME), never the developer's own key.
 */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  return spawnCli(args, options).done;
}

/** Like `runCli`, but hands back the child while it runs (for Ctrl-C tests). */
export function spawnCli(args: string[], options: CliOptions = {}): RunningCli {
  const env: Record<string, string> = {
    PATH: process.env["PATH"] ?? "",
    HOME: process.env["HOME"] ?? "/root",
    NO_COLOR: "1",
    // Transcripts of test runs go to a scratch place, not the developer's own state directory.
    XDG_STATE_HOME: join(tmpdir(), "harness-test-state"),
    ...(process.env["DOCKER_HOST"] ? { DOCKER_HOST: process.env["DOCKER_HOST"] } : {}),
    ...options.env,
  };
  for (const name of options.unset ?? []) delete env[name];
  const command = [process.execPath, CLI_PATH, ...args];
  if (options.terminal) command.unshift("python3", PTY_RUN);
  const [file = "", ...rest] = command;
  const child = spawn(file, rest, {
    cwd: options.cwd ?? process.cwd(),
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<CliRun>((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  if (options.keepStdin) child.stdin.write(options.input ?? "");
  else child.stdin.end(options.input ?? "");
  const waitForStdout = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!pattern.test(stdout)) return;
        cleanup();
        resolve();
      };
      const exited = () => {
        cleanup();
        reject(new Error(`the CLI exited before stdout matched ${pattern}:\n${stdout}\n${stderr}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`stdout did not match ${pattern} within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        child.stdout.off("data", check);
        child.off("close", exited);
      };
      child.stdout.on("data", check);
      child.on("close", exited);
      check();
    });
  return { child, stdout: () => stdout, stderr: () => stderr, waitForStdout, done };
}
