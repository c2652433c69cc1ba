/**
 * Caps a text the model gets: keep the head and the tail, say how much was cut. Used for a page of
 * saved output (`read_output`); a command's own output was already cut by the sandbox, in bytes,
 * and is not cut again.
 */

export interface TruncateResult {
  /** The text, whole or as head + marker + tail. */
  text: string;
  /** How many characters (UTF-16 code units) were left out; 0 when nothing was cut. */
  elidedChars: number;
}

/**
 * Keeps at most `maxChars` of `text` (plus the marker line): the first and the last half.
 * The middle goes because errors and summaries tend to be at the ends.
 */
export function truncateMiddle(text: string, maxChars: number): TruncateResult {
  if (text.length <= maxChars) return { text, elidedChars: 0 };
  let headEnd = Math.ceil(maxChars / 2);
  let tailStart = text.length - Math.floor(maxChars / 2);
  // Never split a surrogate pair: half an emoji is not valid text for the API.
  if (isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd -= 1;
  if (isLowSurrogate(text.charCodeAt(tailStart))) tailStart += 1;
  const elidedChars = tailStart - headEnd;
  const marker = `\n[… ${elidedChars.toLocaleString("en-US")} characters elided …]\n`;
  return { text: text.slice(0, headEnd) + marker + text.slice(tailStart), elidedChars };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
