/** Small helpers for the benchmark: summary statistics, a text table, child processes. */
import { spawn } from "node:child_process";

export interface Summary {
  n: number;
  medianMs: number;
  p90Ms: number;
  minMs: number;
  maxMs: number;
  meanMs: number;
  p95Ms: number;
}

const round = (x: number, digits = 2): number => Number(x.toFixed(digits));

/** Median and nearest-rank p90 and p95 of the samples (milliseconds). */
export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) throw new Error("no samples to summarize");
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (i: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, i))] ?? Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? at(mid) : (at(mid - 1) + at(mid)) / 2;
  return {
    n: sorted.length,
    medianMs: round(median),
    p90Ms: round(at(Math.ceil(0.9 * sorted.length) - 1)),
    minMs: round(at(0)),
    maxMs: round(at(sorted.length - 1)),
    meanMs: round(sorted.reduce((sum, x) => sum + x, 0) / sorted.length),
    p95Ms: round(at(Math.ceil(0.95 * sorted.length) - 1)),
  };
}

export function ratio(a: number, b: number): number {
  return round(a / b, 3);
}

/** Left-aligns the first column, right-aligns the others. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, col) => Math.max(...all.map((row) => (row[col] ?? "").length)));
  const line = (row: readonly string[]): string =>
    row
      .map((cell, col) => (col === 0 ? cell.padEnd(widths[col] ?? 0) : cell.padStart(widths[col] ?? 0)))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(header), rule, ...rows.map(line)].join("\n");
}

export function ms(x: number): string {
  return x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(1)} ms`;
}

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a process to completion, collecting its output (no shell). */
export function runProcess(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.once("error", reject);
    child.once("close", (code) =>
      resolve({
        code,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      }),
    );
  });
}

/** Integer from the environment, or the default; rejects anything that is not a positive integer. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

/**
 * Runs every method `warmup` times, then `iterations` rounds, each round starting at the next method,
 * so that no method always runs right after the same other one.
 */
export async function roundRobin(
  methods: Record<string, () => Promise<void>>,
  warmup: number,
  iterations: number,
): Promise<Record<string, Summary>> {
  const names = Object.keys(methods);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const name of names) for (let i = 0; i < warmup; i++) await methods[name]?.();
  for (let round = 0; round < iterations; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length] ?? "";
      const started = performance.now();
      await methods[name]?.();
      samples[name]?.push(performance.now() - started);
    }
  }
  return Object.fromEntries(names.map((n) => [n, summarize(samples[n] ?? [])]));
}

/** One target, as printed: "met" or "MISSED". */
export interface Target {
  what: string;
  value: string;
  met: boolean;
}

export function targetTable(targets: readonly Target[]): string {
  return formatTable(
    ["target", "measured", ""],
    targets.map((t) => [t.what, t.value, t.met ? "met" : "MISSED"]),
  );
}
