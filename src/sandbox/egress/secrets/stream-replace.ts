/**
 * A stream that replaces fixed byte strings wherever the chunks split them: a `--secret-in-body`
 * placeholder by its value on the way to its host, exactly as written (what the sandbox wrote is
 * its own to spell; only the exact placeholder stands for the value). It holds back at most the
 * longest string less one byte, so memory stays bounded.
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
