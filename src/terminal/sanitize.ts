/**
 * The one way text from the sandbox (and from the model, transcripts and other files it could have
 * written) reaches the user's terminal. Such text can carry escape sequences that set the window
 * title (OSC 0/2), write the clipboard (OSC 52), hide links (OSC 8), clear the screen, or move the
 * cursor up and erase a line to overwrite what was shown (a warning about the very file that carries
 * them); 8-bit C1 controls (U+009B is a CSI on its own) do the same, and bidi overrides or invisible
 * format characters ("Trojan Source", CVE-2021-42574) make a name read differently from what it is.
 *
 * Every such character is shown as an escape instead (`\x1b]52;c;…\x07`, `\u009b`, `\u202e`),
 * never dropped: the user sees that something odd is there, and a file name stays recognisable (a
 * name with its controls silently removed names another file, or none). The form is the one the
 * model sees (text/visible-controls.ts), and it is printable ASCII, so showing it again changes
 * nothing: sanitising twice is the same as once. Stateless and per character, so it is as safe on
 * stream chunks that split a sequence as on whole strings.
 *
 * A file name that is not UTF-8 reaches here with each such byte as a lone surrogate U+DC80 + byte
 * (sandbox/host/byte-names.ts); it is shown as the byte, `\xff`, and any other lone surrogate as
 * `\udXXX`: a terminal would show both as U+FFFD, which names no file.
 *
 * Carriage returns become newlines (`\r\n` one newline): a lone `\r` would let a line be overwritten
 * by the next, and a progress bar printed line by line is harmless. With `oneLine`, newlines, tabs
 * and carriage returns are escaped too (`\n`, `\t`, `\r`): for a name or a message that is printed
 * as one line, so it cannot start a line of its own that looks like harness's.
 *
 * Only for terminal text: transcripts, saved outputs and JSON keep the bytes as they were. A
 * command's own output on a terminal goes through command-output.ts, which lets plain SGR colour
 * through and shows everything else with this function.
 */

/**
 * C0 and C1 controls (`\p{Cc}`: ESC, BEL, backspace, NUL, DEL, U+0080–U+009F …), format characters
 * (`\p{Cf}`: bidi embeddings, overrides, isolates and marks, zero-width space/joiners U+200B–U+200F,
 * word joiner, BOM U+FEFF, soft hyphen, tag characters), and the line and paragraph separators.
 */
const CONTROLS = /[\p{Cc}\p{Cf}\u2028\u2029\ud800-\udfff]/gu;

const NAMED: Readonly<Record<string, string>> = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };

export interface SanitizeOptions {
  /** Escape newlines, tabs and carriage returns too: the text is printed as (part of) one line. */
  oneLine?: boolean;
}

export function sanitizeForTerminal(text: string, options: SanitizeOptions = {}): string {
  const oneLine = options.oneLine === true;
  return (oneLine ? text : text.replace(/\r\n?/g, "\n")).replace(CONTROLS, (char) => {
    if (!oneLine && (char === "\n" || char === "\t")) return char;
    const named = NAMED[char];
    if (named !== undefined) return named;
    const code = char.codePointAt(0) ?? 0;
    if (code >= 0xdc80 && code <= 0xdcff) return `\\x${(code - 0xdc00).toString(16)}`;
    if (code <= 0xff) return `\\x${code.toString(16).padStart(2, "0")}`;
    if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, "0")}`;
    return `\\u{${code.toString(16)}}`;
  });
}
