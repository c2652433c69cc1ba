/**
 * File names as the kernel has them: any bytes but `/` and NUL, not necessarily UTF-8. A sandbox can
 * create `$'d\xff'`; Node's string paths decode it to `d\uFFFD`, the lstat that follows fails, and
 * a host walk that reads directories as strings silently skips the entry (a planted repository, a
 * setuid file).
 *
 * So host walks read directories as bytes and carry each name as a lossless string: valid UTF-8 as
 * the text it is, each byte that is not part of valid UTF-8 as the lone surrogate U+DC80 + byte
 * (Python's "surrogateescape", PEP 383). Valid UTF-8 never decodes to a lone surrogate, so the
 * mapping is exact both ways; such strings join, split on `/`, sort and go through JSON (as
 * `\udcff`) like any other, and `fsPath` turns one back into the exact bytes for a file system
 * call. sanitizeForTerminal (terminal/sanitize.ts) shows each such byte as `\xNN`.
 */
import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";

/** A byte that is not part of valid UTF-8, as it is carried in a name string. */
const ESCAPED_BYTE = /[\udc80-\udcff]/u;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Length of the well-formed UTF-8 sequence at `i` (Unicode Table 3-7), or 0 when there is none. */
function sequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i] ?? 0;
  if (b0 < 0x80) return 1;
  const cont = (k: number, low = 0x80, high = 0xbf) => {
    const b = bytes[i + k];
    return b !== undefined && b >= low && b <= high;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if (b0 === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0; // no encoded surrogates
  if (b0 >= 0xe1 && b0 <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (b0 === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xf1 && b0 <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/** The lossless string of a name (or path) read as bytes. */
export function nameFromBytes(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    let out = "";
    for (let i = 0; i < bytes.length; ) {
      const n = sequenceLength(bytes, i);
      if (n === 0) out += String.fromCharCode(0xdc00 + (bytes[i] ?? 0));
      else out += Buffer.from(bytes.buffer, bytes.byteOffset + i, n).toString("utf8");
      i += n === 0 ? 1 : n;
    }
    return out;
  }
}

/** True when the name holds bytes that are not UTF-8. */
export function hasRawBytes(name: string): boolean {
  return ESCAPED_BYTE.test(name);
}

/** The exact bytes of a name that `nameFromBytes` gave. */
export function bytesOfName(name: string): Buffer {
  if (!hasRawBytes(name)) return Buffer.from(name, "utf8");
  const chunks: Buffer[] = [];
  let text = "";
  for (const char of name) {
    const code = char.codePointAt(0) ?? 0;
    if (code >= 0xdc80 && code <= 0xdcff) {
      chunks.push(Buffer.from(text, "utf8"), Buffer.from([code - 0xdc00]));
      text = "";
    } else text += char;
  }
  chunks.push(Buffer.from(text, "utf8"));
  return Buffer.concat(chunks);
}

/**
 * What to hand a file system call for this path: the string itself when it is UTF-8 (Node encodes
 * it back to the same bytes), its exact bytes otherwise.
 */
export function fsPath(path: string): string | Buffer {
  return hasRawBytes(path) ? bytesOfName(path) : path;
}

/** One directory entry: its lossless name, and the type the directory gave (no lstat). */
export interface ByteNamedEntry {
  name: string;
  entry: Dirent<Buffer>;
}

/** A directory's entries, read as bytes; a path given as a lossless string is read by its bytes. */
export async function readdirLossless(dir: string | Buffer): Promise<ByteNamedEntry[]> {
  const entries = await readdir(typeof dir === "string" ? fsPath(dir) : dir, {
    withFileTypes: true,
    encoding: "buffer",
  });
  return entries.map((entry) => ({ name: nameFromBytes(entry.name), entry }));
}
