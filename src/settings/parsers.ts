/** How settings' texts are read: each throws ConfigError naming the flag, never returns a wrong value. */
import { ConfigError } from "../errors.js";

/** A positive number ("" is none, as an unset flag); `integer` refuses fractions. */
export function positiveNumber(name: string, value: string | undefined, integer = true): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new ConfigError(`${name} must be a positive ${integer ? "whole " : ""}number, got '${value}'`);
  }
  return n;
}

/** "2g", "500m", "1GiB", "4096" (bytes); for a size flag named `flag`. */
export function parseByteSize(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(value.trim());
  const scale = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[
    (match?.[2] ?? "").toLowerCase()
  ];
  const bytes = Math.round(Number(match?.[1]) * (scale ?? 1));
  if (!match || !(bytes > 0)) throw new ConfigError(`${flag} must look like 500m or 2g, got '${value}'`);
  return bytes;
}

/** A setting's parser (text, then the flag's name) for a size in bytes. */
export function byteSize(text: string, flag: string): number | undefined {
  return parseByteSize(flag, text);
}

/** A size in MiB, rounded up (tmpfs sizes). */
export function mebibytes(value: string, flag: string): number | undefined {
  const bytes = parseByteSize(flag, value);
  return bytes === undefined ? undefined : Math.max(1, Math.ceil(bytes / 1024 ** 2));
}

/** Seconds in ms; Node's timers hold at most 2^31-1 ms (about 24 days). */
export function timeoutMs(value: string, flag: string): number | undefined {
  const seconds = positiveNumber(flag, value, false);
  if (seconds === undefined) return undefined;
  if (seconds * 1000 > 2 ** 31 - 1)
    throw new ConfigError(`${flag} must be at most 2147483 seconds, got '${value}'`);
  return Math.round(seconds * 1000);
}

/** One of `choices`, trimmed. */
export function oneOf<const C extends string>(choices: readonly C[]) {
  return (text: string, flag: string): C => {
    const value = text.trim();
    if (!(choices as readonly string[]).includes(value))
      throw new ConfigError(`${flag} must be ${choices.join(", ")}, got '${value}'`);
    return value as C;
  };
}
