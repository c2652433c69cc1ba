/**
 * Command output as the model reads it: terminal control characters shown as escapes (`\x1b]52;…`)
 * instead of raw bytes. The model reads text, not a terminal, but raw sequences in its context can
 * still mislead it (a bidi override reverses what it reads, an OSC 8 link hides its target) and be
 * copied into files it writes. Tab, newline and carriage return stay as they are. The user's terminal
 * is protected separately (terminal/sanitize.ts shows the same characters, and more, the same way).
 */

/** C0 and C1 controls but \t \n \r, DEL, and the Unicode bidi controls (Trojan Source). */
const CONTROLS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function visibleControls(text: string): string {
  return text.replace(CONTROLS, (char) => {
    const code = char.charCodeAt(0);
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, "0")}`
      : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** How many bytes (UTF-8) of `text` `visibleControls` shows as escapes instead of as themselves. */
export function controlBytes(text: string): number {
  let bytes = 0;
  for (const match of text.matchAll(CONTROLS)) bytes += Buffer.byteLength(match[0]);
  return bytes;
}
