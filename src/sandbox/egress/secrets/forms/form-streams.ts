/**
 * The scanner over streams and whole texts: one stream puts something else in place of every form it
 * finds (a value by its placeholder, on the way to the sandbox), one fails at the first (a value or
 * placeholder on its way to a host it does not belong to). Both hold back only the bytes that might
 * begin a form the next chunk completes, so a form split across chunks, however finely, is still one
 * form, and no byte of it passes before it is decided.
 */
import { Transform } from "node:stream";
import type { FormMatch, FormScanner } from "./form-scanner.js";

/** What takes the place of a chain of matches (one, or base64 ones sharing edge characters). */
export type Rewrite<Tag> = (chain: readonly FormMatch<Tag>[]) => Buffer;

/** `buffer` up to `end` with each chain of matches replaced by `rewrite(chain)`. */
function replaced<Tag>(
  buffer: Buffer,
  matches: readonly FormMatch<Tag>[],
  end: number,
  rewrite: Rewrite<Tag>,
): Buffer {
  if (matches.length === 0) return buffer.subarray(0, end);
  const parts: Buffer[] = [];
  let at = 0;
  let chain: FormMatch<Tag>[] = [];
  const close = (): void => {
    const [first] = chain;
    const last = chain.at(-1);
    if (first === undefined || last === undefined) return;
    parts.push(buffer.subarray(at, first.start), rewrite(chain));
    at = last.end;
    chain = [];
  };
  for (const match of matches) {
    if (match.start >= (chain.at(-1)?.end ?? 0)) close();
    chain.push(match);
  }
  close();
  parts.push(buffer.subarray(at, end));
  return Buffer.concat(parts);
}

/** Replaces every form `scanner` finds, wherever the chunks split it. */
export function maskingStream<Tag>(scanner: FormScanner<Tag>, rewrite: Rewrite<Tag>): Transform {
  let pending = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const buffer = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const { matches, safeEnd } = scanner.scan(buffer, false);
      pending = Buffer.from(buffer.subarray(safeEnd));
      callback(null, replaced(buffer, matches, safeEnd, rewrite));
    },
    flush(callback) {
      const { matches } = scanner.scan(pending, true);
      callback(null, replaced(pending, matches, pending.length, rewrite));
    },
  });
}

/** Passes bytes on until a form appears, then fails with `found(match)` before any byte of it is sent. */
export function watchingStream<Tag>(
  scanner: FormScanner<Tag>,
  found: (match: FormMatch<Tag>) => Error,
): Transform {
  let pending = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const buffer = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const { matches, safeEnd } = scanner.scan(buffer, false);
      const [first] = matches;
      if (first !== undefined) return callback(found(first));
      pending = Buffer.from(buffer.subarray(safeEnd));
      callback(null, buffer.subarray(0, safeEnd));
    },
    flush(callback) {
      const [first] = scanner.scan(pending, true).matches;
      callback(first === undefined ? null : found(first), pending);
    },
  });
}

/** A whole text (a header, a status line, a request target) with every form replaced. */
export function maskedText<Tag>(scanner: FormScanner<Tag>, text: string, rewrite: Rewrite<Tag>): string {
  const buffer = Buffer.from(text, "latin1");
  const { matches } = scanner.scan(buffer, true);
  return matches.length === 0 ? text : replaced(buffer, matches, buffer.length, rewrite).toString("latin1");
}

/** The first form in a whole text, if any. */
export function firstForm<Tag>(scanner: FormScanner<Tag>, text: string): FormMatch<Tag> | undefined {
  return scanner.scan(Buffer.from(text, "latin1"), true).matches[0];
}
