/** What the flood children run and report; shared by exec-bench.ts and flood-child.ts. */
export const FLOOD_BYTES = 200_000_000;
export const FLOOD_COMMAND = `head -c ${FLOOD_BYTES} /dev/zero | tr '\\0' x`;

export interface FloodReport {
  mode: "harness" | "bare";
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
}
