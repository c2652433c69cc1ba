// biome-ignore-all lint/suspicious/noControlCharactersInRegex: matching control characters is this file's job.
/**
 * Makes untrusted text safe to print on a terminal. Command output and model text can carry escape
 * sequences that set the window title (OSC 0/2), write the clipboard (OSC 52), hide links (OSC 8),
 * reset or clear the screen, move the cursor to overwrite what was shown, or reorder text with bidi
 * overrides ("Trojan Source", CVE-2021-42574). What is left is plain text, newlines and tabs.
 *
 * Carriage returns become newlines (`\r\n` becomes one newline): a lone `\r` could otherwise overwrite
 * a line with a different one, and a progress bar printed line by line is harmless.
 *
 * Stateless, so it can run on stream chunks: a sequence split across two chunks loses its ESC in the
 * first and shows as plain characters in the second, which cannot act on the terminal.
 */

/**
 * OSC, DCS, SOS, PM, APC (7-bit `ESC ] P X ^ _` or 8-bit C1) up to BEL/ST; unterminated ones end at a
 * newline.
 */
const STRING_SEQUENCE =
  /(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u001b\u009c\n]*(?:\u0007|\u001b\\|\u009c)?/g;
/** CSI (`ESC [` or 8-bit U+009B): parameters, intermediates, final byte (cursor moves, erase, SGR, …). */
const CSI = /(?:\u001b\[|\u009b)[0-?]*[ -/]*[@-~]?/g;
/** Every other escape (`ESC c` reset, `ESC ( B`, `ESC 7`, …) and a lone ESC. */
const OTHER_ESCAPE = /\u001b[ -/]*[0-~]?/g;
/** C1 controls, U+0080–U+009F. */
const C1 = /[\u0080-\u009f]/g;
/** C0 controls except tab and newline (BEL, backspace, form feed, …), and DEL. */
const C0 = /[\u0000-\u0008\u000b-\u001f\u007f]/g;
/** Bidi embeddings/overrides (U+202A–U+202E) and isolates (U+2066–U+2069). */
const BIDI = /[\u202a-\u202e\u2066-\u2069]/g;

export function sanitizeForTerminal(text: string): string {
  return text
    .replace(STRING_SEQUENCE, "")
    .replace(CSI, "")
    .replace(OTHER_ESCAPE, "")
    .replace(C1, "")
    .replace(/\r\n?/g, "\n")
    .replace(C0, "")
    .replace(BIDI, "");
}
