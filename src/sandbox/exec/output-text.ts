/**
 * A command's output bytes as the text its caller gets, and how many of them that text does not carry
 * as themselves (issue 35). Valid UTF-8 passes as is; a NUL and every byte that is not part of a
 * valid UTF-8 sequence become a `\xNN` escape (the byte's value, where a replacement character
 * would lose it), and are counted, so that the tool result can say the text is not byte-exact
 * instead of the model taking `\xff` or `\x00` for what the command printed. Control characters
 * that are valid UTF-8 are left to the layer that shows text (tools: `visibleControls`).
 */
import { isUtf8 } from "node:buffer";

export interface OutputText {
  text: string;
  /** Bytes shown as `\xNN` escapes: NULs and bytes that are not valid UTF-8. */
  notTextBytes: number;
}

export function outputText(bytes: Buffer): OutputText {
  if (bytes.indexOf(0) < 0 && isUtf8(bytes)) return { text: bytes.toString("utf8"), notTextBytes: 0 };
  const parts: string[] = [];
  let notTextBytes = 0;
  let runStart = 0;
  let i = 0;
  while (i < bytes.length) {
    const length = bytes[i] === 0 ? 0 : sequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    if (i > runStart) parts.push(bytes.toString("utf8", runStart, i));
    parts.push(`\\x${(bytes[i] ?? 0).toString(16).padStart(2, "0")}`);
    notTextBytes += 1;
    i += 1;
    runStart = i;
  }
  if (runStart < bytes.length) parts.push(bytes.toString("utf8", runStart));
  return { text: parts.join(""), notTextBytes };
}

/**
 * Length of the valid UTF-8 sequence starting at `i`, or 0 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF).
 */
function sequenceLength(bytes: Buffer, i: number): number {
  const lead = bytes[i] ?? 0;
  if (lead < 0x80) return 1;
  let length: number;
  let low = 0x80;
  let high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead === 0xe0) low = 0xa0;
    if (lead === 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead === 0xf0) low = 0x90;
    if (lead === 0xf4) high = 0x8f;
  } else return 0;
  if (i + length > bytes.length) return 0;
  const second = bytes[i + 1] ?? 0;
  if (second < low || second > high) return 0;
  for (let k = 2; k < length; k++) if (((bytes[i + k] ?? 0) & 0xc0) !== 0x80) return 0;
  return length;
}
