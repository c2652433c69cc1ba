/** What the flood children run and report; shared by exec-bench.ts and flood-child.ts. */
export const FLOOD_BYTES = 200_000_000;
export const FLOOD_COMMAND = `head -c ${FLOOD_BYTES} /dev/zero | tr '\\0' x`;

/** executor: sandbox.exec on the executor; per-call: sandbox.exec with `executor: false`; bare: dockerode. */
export type FloodMode = "executor" | "per-call" | "bare";

export interface FloodReport {
  mode: FloodMode;
  /** maxRSS (KiB) after loading and a few warm-up execs, before the flood. */
  baselineMaxRssKiB: number;
  baselineRssKiB: number;
  /** maxRSS (KiB) after the flood: the peak over the child's whole life. */
  peakMaxRssKiB: number;
  endRssKiB: number;
  /** The exec's own duration (harness: ExecResult.durationMs; bare: create to inspect). */
  durationMs: number;
  wallMs: number;
  exitCode: number | null;
  stdoutBytes: number;
  stderrBytes: number;
  /** Characters of stdout the result kept (harness keeps head and tail only). */
  keptStdoutChars: number;
  /** What the sandbox said through onProgress (a per-call notice means the executor was not used). */
  notices: string[];
}
