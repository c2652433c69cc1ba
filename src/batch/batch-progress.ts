/**
 * Progress while a batch runs, on stderr. On a terminal: one status line redrawn in place (done,
 * running, failed, cost so far, ETA) with a line above it per finished task. Otherwise: a plain
 * line per finished task, for CI logs.
 */
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { formatDuration } from "../text/units.js";
import { formatCost } from "./batch-summary.js";
import type { BatchResult } from "./results-file.js";

type Stream = NodeJS.WritableStream & { isTTY?: boolean };

export interface ProgressOptions {
  /** Where progress goes (stderr). */
  out: Stream;
  /** Tasks this command runs. */
  total: number;
  /** Redraw in place (default: `out.isTTY`). */
  tty?: boolean;
  /** Milliseconds clock, for tests. */
  now?: () => number;
}

export interface BatchProgress {
  started(id: string): void;
  finished(result: BatchResult): void;
  /** A line for people, e.g. sandbox progress. */
  note(line: string): void;
  /** Removes the status line and stops the redraw timer. */
  close(): void;
}

export function createProgress(options: ProgressOptions): BatchProgress {
  const { out, total } = options;
  const tty = options.tty ?? out.isTTY === true;
  const now = options.now ?? (() => performance.now());
  const startedAt = now();
  let running = 0;
  let done = 0;
  let failed = 0;
  let cost: number | null = 0;
  let drawn = false;
  const status = () => {
    const elapsed = now() - startedAt;
    const eta = done === 0 ? "-" : formatDuration((elapsed / done) * (total - done));
    return `[${done}/${total}] running ${running} · failed ${failed} · ${formatCost(cost)} · ETA ${eta}`;
  };
  const clear = () => {
    if (drawn) out.write("\r\x1b[2K");
    drawn = false;
  };
  const draw = () => {
    if (!tty) return;
    clear();
    out.write(status());
    drawn = true;
  };
  const timer = tty ? setInterval(draw, 1000) : undefined;
  timer?.unref();
  const line = (text: string) => {
    clear();
    out.write(`harness: ${sanitizeForTerminal(text, { oneLine: true })}\n`);
    draw();
  };
  return {
    started() {
      running += 1;
      draw();
    },
    finished(result) {
      running = Math.max(0, running - 1);
      done += 1;
      if (result.is_error) failed += 1;
      cost = cost === null || result.total_cost_usd === null ? null : cost + result.total_cost_usd;
      const why = result.error ? `: ${result.error.message}` : "";
      line(
        `[${done}/${total}] ${result.task_id} ${result.status} · ${result.num_turns} turns · ${formatDuration(result.duration_ms)} · ${formatCost(result.total_cost_usd)}${why}`,
      );
    },
    note: line,
    close() {
      if (timer) clearInterval(timer);
      clear();
    },
  };
}
