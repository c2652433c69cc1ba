/** The peer bench's tables, in Markdown (pasted as is into docs/executor.md). */

import { ms, ratio, summarize } from "../stats.js";
import type { Verdict } from "./behaviour-checks.js";
import type { DriverReply } from "./driver-protocol.js";
import type { MemoryPeak } from "./memory-sampler.js";

export const SYSTEMS = [
  "harness",
  "mini",
  "llm-sandbox",
  "swerex-session",
  "swerex-execute",
  "epicbox",
] as const;
export type SystemName = (typeof SYSTEMS)[number];

export const TITLES: Record<SystemName, string> = {
  harness: "harness",
  mini: "mini-swe-agent",
  "llm-sandbox": "llm-sandbox",
  "swerex-session": "SWE-ReX session",
  "swerex-execute": "SWE-ReX `execute`",
  epicbox: "epicbox",
};

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** "median / p95 ms (peer ÷ harness of the medians)", or why there is no figure. */
export function figureCell(
  samples: readonly number[],
  harness: readonly number[],
  isHarness: boolean,
): string {
  if (samples.length === 0) return "—";
  const s = summarize(samples);
  const cell = `${ms(s.medianMs)} / ${ms(s.p95Ms)}`;
  if (isHarness || harness.length === 0) return cell;
  return `${cell} (${ratio(s.medianMs, summarize(harness).medianMs).toFixed(2)}x)`;
}

export interface Flood {
  reply: DriverReply;
  memory: MemoryPeak;
  /** The client's resident size once its modules were loaded, before it opened anything (MB). */
  clientIdleMB: number;
}

export function floodReturned(f: Flood, timeout: number): string {
  const r = f.reply;
  if (!r.returned) return `hung (waited ${r.waited} s; its timeout ${timeout} s)`;
  const s = `${((r.ms ?? 0) / 1000).toFixed(1)} s`;
  if (r.timedOut) return `after ${s}, timed out`;
  return r.error && r.stdout == null ? `after ${s}, error: ${r.error.slice(0, 50)}` : `yes, ${s}`;
}

export function floodGot(f: Flood, bytes: number): string {
  const out = f.reply.stdout;
  if (!f.reply.returned || out == null) return "nothing";
  if (out.len === bytes && out.allZero === true) return `all ${bytes.toLocaleString("en")} bytes`;
  const kept = out.len.toLocaleString("en");
  // harness keeps a head and a tail with a note between them, and counts every byte written.
  if (f.reply.truncated && f.reply.counted !== undefined)
    return `${kept} bytes kept (head, tail, a note), cut said (${f.reply.counted.toLocaleString("en")} counted)`;
  return out.allZero === true
    ? `${kept} of the bytes, nothing said of the rest`
    : `${kept} bytes, not the output`;
}

export function floodMemory(f: Flood): string {
  const m = f.memory;
  // Three peaks, each on its own: client and server need not peak at the same sample.
  return `client ${m.clientMB}, server ${m.serverMB}, together ${m.totalMB} MB (idle client ${f.clientIdleMB} MB)`;
}

export function behaviourCell(v: Verdict | undefined): string {
  return v === undefined ? "—" : v.cell;
}
