/**
 * Streams that look for fixed byte strings across chunk boundaries: one replaces them (a placeholder
 * by its value on the way up, a value by its placeholder on the way down), one only watches for them
 * (a placeholder going where it does not belong) and fails the stream when it sees one. Each holds
 * back at most the longest needle less one byte, so memory stays bounded.
 */
import { Transform } from "node:stream";

export interface Replacement {
  from: Buffer;
  to: Buffer;
}

/** Replaces every `from` by its `to`, wherever the chunks split them. */
export function replacingStream(replacements: readonly Replacement[]): Transform {
  const keep = Math.max(0, ...replacements.map((r) => r.from.length - 1));
  let pending = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const buffer = Buffer.concat([pending, chunk]);
      const { out, rest } = replaceAll(buffer, replacements);
      const hold = Math.min(rest.length, keep);
      pending = Buffer.from(rest.subarray(rest.length - hold));
      callback(null, Buffer.concat([out, rest.subarray(0, rest.length - hold)]));
    },
    flush(callback) {
      callback(null, pending);
    },
  });
}

/** `buffer` with every complete needle replaced, and the bytes after the last one not yet decided. */
function replaceAll(buffer: Buffer, replacements: readonly Replacement[]): { out: Buffer; rest: Buffer } {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    let best: { index: number; replacement: Replacement } | undefined;
    for (const replacement of replacements) {
      const index = buffer.indexOf(replacement.from, at);
      if (index >= 0 && (best === undefined || index < best.index)) best = { index, replacement };
    }
    if (best === undefined) break;
    parts.push(buffer.subarray(at, best.index), best.replacement.to);
    at = best.index + best.replacement.from.length;
  }
  return { out: Buffer.concat(parts), rest: buffer.subarray(at) };
}

/** Replaces in a whole string (heads, not bodies). */
export function replaceInText(
  text: string,
  replacements: ReadonlyArray<{ from: string; to: string }>,
): string {
  let result = text;
  for (const { from, to } of replacements) result = result.split(from).join(to);
  return result;
}

/**
 * Passes bytes through unchanged until one of `needles` appears (compared case-insensitively for
 * ASCII), then fails with `found(needle)`'s error: the request is cut before the rest is sent.
 */
export function watchingStream(needles: readonly string[], found: (needle: string) => Error): Transform {
  const lowered = needles.map((n) => ({ needle: n, bytes: Buffer.from(n.toLowerCase(), "latin1") }));
  const keep = Math.max(0, ...lowered.map((n) => n.bytes.length - 1));
  let tail = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const window = Buffer.from(Buffer.concat([tail, chunk]).toString("latin1").toLowerCase(), "latin1");
      const hit = lowered.find((n) => window.includes(n.bytes));
      if (hit !== undefined) return callback(found(hit.needle));
      tail = Buffer.from(window.subarray(Math.max(0, window.length - keep)));
      callback(null, chunk);
    },
  });
}
