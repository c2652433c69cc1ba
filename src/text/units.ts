/**
 * Sizes and durations for people: the one formatter every message, table and summary uses, so that
 * `harness runs`, the batch summary, copy mode's limits and the terminal show a size the same way.
 */

const UNITS = ["KiB", "MiB", "GiB", "TiB"] as const;

/** "512 B", "4.0 KiB", "12 MiB", "3.4 GiB": one decimal below 10, none above. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${UNITS[unit]}`;
}

/** An exact count for the model, which should not round: "1,234,567 bytes". */
export function formatByteCount(bytes: number): string {
  return `${bytes.toLocaleString("en-US")} byte${bytes === 1 ? "" : "s"}`;
}

/** "850ms", "4.2s", "3m05s"; "-" when unknown. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return "-";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}
