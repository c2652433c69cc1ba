/**
 * How `harness runs` shows the runs: a table for people (newest first, the task shortened to fit) or
 * JSON for programs. Tasks and workspaces came from the user or a file, so their control
 * characters are shown as escapes and they are flattened to one line.
 */
import { homedir } from "node:os";
import { formatUsd } from "../model/pricing.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { formatBytes } from "../text/units.js";
import type { RunListing } from "./run-catalog.js";

export interface TableOptions {
  /** Now, ms since the epoch (for "3h ago"). */
  now: number;
  /** Terminal width in columns; the task is cut to fit. Undefined (not a terminal): 60 characters. */
  columns?: number;
  /** The home directory, shown as "~". */
  home?: string;
}

const HEADER = ["RUN", "STARTED", "STATUS", "TURNS", "COST", "SIZE", "WORKSPACE", "TASK"] as const;
/** Columns right-aligned (numbers). */
const RIGHT = new Set([3, 4, 5]);

/** The table's lines, header first. */
export function formatRunTable(runs: readonly RunListing[], options: TableOptions): string[] {
  const home = options.home ?? homedir();
  const rows = runs.map((run) => [
    flat(run.id),
    shownAge(options.now - run.startedMs),
    flat(run.status),
    String(run.turns),
    run.costUsd === null ? "-" : formatUsd(run.costUsd),
    formatBytes(run.transcriptBytes + run.outputsBytes + run.checkpointsBytes),
    shortWorkspace(run.workspace, home),
    flat(run.task ?? ""),
  ]);
  const all: string[][] = [[...HEADER], ...rows];
  const widths = HEADER.map((_, col) => Math.max(...all.map((row) => (row[col] ?? "").length)));
  const fixed = widths.slice(0, -1).reduce((sum, width) => sum + width + 2, 0);
  const taskWidth = options.columns === undefined ? 60 : Math.max(20, options.columns - fixed);
  return all.map((row) =>
    row
      .map((cell, col) => {
        if (col === HEADER.length - 1) return shorten(cell, taskWidth);
        const width = widths[col] ?? 0;
        return RIGHT.has(col) ? cell.padStart(width) : cell.padEnd(width);
      })
      .join("  ")
      .trimEnd(),
  );
}

/** A run as `harness runs --output-format json` gives it. */
export function runToJson(run: RunListing): Record<string, unknown> {
  return {
    id: run.id,
    startedAt: new Date(run.startedMs).toISOString(),
    modifiedAt: new Date(run.modifiedMs).toISOString(),
    workspace: run.workspace ?? null,
    task: run.task ?? null,
    status: run.status,
    active: run.active,
    turns: run.turns,
    usage: run.usage,
    model: run.model ?? null,
    costUsd: run.costUsd,
    transcriptPath: run.transcriptPath ?? null,
    outputsPath: run.outputsPath ?? null,
    transcriptBytes: run.transcriptBytes,
    outputsBytes: run.outputsBytes,
    checkpointsPath: run.checkpointsPath ?? null,
    checkpointsBytes: run.checkpointsBytes,
    totalBytes: run.transcriptBytes + run.outputsBytes + run.checkpointsBytes,
    partial: run.partial,
    problem: run.problem ?? null,
  };
}

/** "just now", "5m ago", "3h ago", "12d ago". */
export function shownAge(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes}m ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ago`;
  return `${Math.floor(hours / 24)}d ago`;
}

function shortWorkspace(workspace: string | undefined, home: string): string {
  if (workspace === undefined) return "-";
  const shown = flat(
    home !== "/" && workspace.startsWith(`${home}/`) ? `~${workspace.slice(home.length)}` : workspace,
  );
  // The end of a path says most: "…/projects/app".
  return shown.length > 32 ? `…${shown.slice(-31)}` : shown;
}

/** Printable ASCII only: nothing to strip (most tasks and paths; saves the sanitizer on thousands). */
const PLAIN = /^[\x20-\x7e]*$/;

function flat(text: string): string {
  return (PLAIN.test(text) ? text : sanitizeForTerminal(text)).replace(/\s+/g, " ").trim();
}

function shorten(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}
