/** Reads a transcript file and parses its text, every failure a `ConfigError` naming the file. */
import { readFile } from "node:fs/promises";
import { ConfigError } from "../errors.js";

/**
 * `parse` throws a `ConfigError` (of the caller's class, made by `error`) naming the first line
 * that does not fit; the message gets the file's path in front. Anything else it throws passes as is.
 */
export async function readTranscriptFile<T>(
  path: string,
  parse: (text: string) => T,
  error: (message: string) => ConfigError = (message) => new ConfigError(message),
): Promise<T> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    const why =
      (cause as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (cause as Error).message;
    throw error(`cannot read transcript '${path}': ${why}`);
  }
  try {
    return parse(text);
  } catch (cause) {
    if (cause instanceof ConfigError) throw error(`transcript '${path}': ${cause.message}`);
    throw cause;
  }
}
