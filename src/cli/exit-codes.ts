/**
 * The exit-code contract of every harness command, tested end to end: the one place that turns how
 * something ended into a process exit code, and the one place each code's meaning is written. The
 * README's "Exit codes" table is `exitCodeTable()` (test/unit/cli/exit-codes-readme.test.ts compares
 * them), and `harness batch --help` lists `batchExitCodes()`. `harness exec` is the exception that
 * mirrors the command: it exits with the command's own code.
 */
import { constants } from "node:os";
import type { ExitStatus } from "../agent/exit-status.js";
import type { EndCause } from "./session/session-end.js";

interface ExitCode {
  code: number;
  /** What it means, as the README's table says it. */
  meaning: string;
  /** Only `harness exec` uses it: the README says so in prose, beside the table. */
  execOnly?: true;
}

const EXIT_CODES = {
  ok: { code: 0, meaning: "the run finished: the model ended its turn" },
  error: { code: 1, meaning: "an error: the model API (after retries) or Docker" },
  usage: {
    code: 2,
    meaning: "a usage or configuration error: flags, missing key or model, unreadable workspace",
  },
  limit: { code: 3, meaning: "the turn limit, the token budget or the cost budget was reached" },
  modelStopped: {
    code: 4,
    meaning: "the model refused, or could not go on (context window full, repeatedly cut-off output)",
  },
  diverged: {
    code: 5,
    meaning: "`harness replay`: a replayed call's exit code or output differed from the recording",
  },
  timedOut: {
    code: 124,
    meaning: "`harness exec`: the command timed out (as timeout(1) reports it)",
    execOnly: true,
  },
  /**
   * The reader of stdout or stderr went away (`| head -1`), so the running command was killed and
   * the session ended; 128 + SIGPIPE, as a shell reports a pipeline member that SIGPIPE ended.
   */
  brokenPipe: {
    code: 141,
    meaning:
      "the reader of harness's stdout or stderr went away (a pipe into `head`): the session ended as on SIGTERM",
  },
  /** 128 + SIGHUP: the terminal closed. */
  hangup: { code: 129, meaning: "SIGHUP (the terminal closed): the session ended as on SIGTERM" },
  /** 128 + SIGINT, shell style. */
  interrupted: { code: 130, meaning: "interrupted (Ctrl-C)" },
  /** 128 + SIGTERM. */
  terminated: {
    code: 143,
    meaning: "SIGTERM: the running command was stopped and the session ended",
  },
} as const satisfies Record<string, ExitCode>;

export type ExitName = keyof typeof EXIT_CODES;

/** Each exit code by name: `EXIT.usage` is 2. */
export const EXIT = Object.freeze(
  Object.fromEntries(Object.entries(EXIT_CODES).map(([name, { code }]) => [name, code])),
) as { readonly [K in ExitName]: (typeof EXIT_CODES)[K]["code"] };

/** The README's table: `| code | meaning |`, then a row per code but `harness exec`'s own, by code. */
export function exitCodeTable(): string[] {
  const rows = Object.values(EXIT_CODES as Record<string, ExitCode>)
    .filter((c) => !c.execOnly)
    .sort((a, b) => a.code - b.code)
    .map((c) => `| ${c.code} | ${c.meaning} |`);
  return ["| code | meaning |", "|---|---|", ...rows];
}

/**
 * The exit code of a session something ended (session/session-end.ts): 128 + the signal's number,
 * as a shell reports it (SIGPIPE's for a reader that went away); an error (1) for output that failed
 * otherwise (a full disk) and for an error nobody caught.
 */
export function exitCodeForEnd(cause: EndCause): number {
  if (cause.kind === "signal") return 128 + constants.signals[cause.signal];
  if (cause.kind === "output" && cause.code === "EPIPE") return EXIT.brokenPipe;
  return EXIT.error;
}

/** What `harness batch`'s codes mean (a batch ends differently from one run). */
const BATCH_MEANINGS: Readonly<Partial<Record<ExitName, string>>> = {
  ok: "every task finished",
  error: "some ended with an error (Docker, API; --retry errors)",
  usage: "bad usage or tasks file",
  limit: "--max-budget-usd stopped the batch",
  hangup: "SIGHUP (run the same command again to resume)",
  interrupted: "interrupted (run the same command again to resume)",
  terminated: "SIGTERM (run the same command again to resume)",
};

/** `harness batch --help`'s lines: "  0   every task finished", … */
export function batchExitCodes(): string[] {
  return Object.entries(BATCH_MEANINGS).map(
    ([name, meaning]) => `  ${String(EXIT[name as ExitName]).padEnd(4)}${meaning}`,
  );
}

/**
 * `harness run`'s exit code per way a run can end. `usage` (2) is never a run's: the CLI returns it
 * before a run starts.
 */
const RUN_EXIT: Readonly<Record<ExitStatus, number>> = Object.freeze({
  submitted: EXIT.ok,
  error: EXIT.error,
  step_limit: EXIT.limit,
  cost_limit: EXIT.limit,
  refusal: EXIT.modelStopped,
  format_errors: EXIT.modelStopped,
  context_window: EXIT.modelStopped,
  canceled: EXIT.interrupted,
});

/** The process exit code for a run that ended with `status`. */
export function exitCodeFor(status: ExitStatus): number {
  return RUN_EXIT[status];
}
