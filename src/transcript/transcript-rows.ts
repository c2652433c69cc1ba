/**
 * One way to read a transcript's lines, for every reader of them: `--resume` and `--fork`
 * (read-conversation), `harness replay`, `harness runs show` and the runs listing. The strict readers
 * stop at the first line that is not a record, naming it; the lenient ones (for people looking at a
 * run, which may be still written or cut) skip it.
 */
import { ConfigError } from "../errors.js";
import type { TranscriptRecord, UncheckedRecord } from "./transcript-records.js";

/** A record read from the file whose "type" is known to be a string; its other fields are unchecked. */
export type TranscriptRow = UncheckedRecord<TranscriptRecord> & { type: string };

/**
 * Every record of a transcript's text with its 1-based line number; blank lines skipped. A line that
 * is not a record throws `error("line N: …")` (a `ConfigError` unless the caller has its own class).
 */
export function* transcriptRows(
  text: string,
  error: (message: string) => ConfigError = (message) => new ConfigError(message),
): Generator<{ row: TranscriptRow; line: number }> {
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    if (raw.trim() === "") continue;
    // Every record ends with a newline: a last line without one was cut while it was written.
    const cut = index === lines.length - 1 ? " (the transcript ends mid-record: its writer was stopped)" : "";
    let row: TranscriptRow;
    try {
      row = parseTranscriptRow(raw, index + 1, cut);
    } catch (cause) {
      throw error((cause as Error).message);
    }
    yield { row, line: index + 1 };
  }
}

/** One line as a record; throws `ConfigError` ("line N: …") when it is not one. */
function parseTranscriptRow(raw: string, line: number, cut = ""): TranscriptRow {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new ConfigError(`line ${line}: not valid JSON (${(error as Error).message})${cut}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ConfigError(`line ${line}: a record must be a JSON object`);
  if (typeof (value as { type?: unknown }).type !== "string")
    throw new ConfigError(`line ${line}: a record needs a string "type"`);
  return value as TranscriptRow;
}

/** One line as a record, or `undefined` when it is not one (the lenient readers skip it). */
export function tryTranscriptRow(raw: string): (TranscriptRow & Record<string, unknown>) | undefined {
  try {
    return parseTranscriptRow(raw, 0) as TranscriptRow & Record<string, unknown>;
  } catch {
    return undefined;
  }
}
