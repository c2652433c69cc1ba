/**
 * A command's output on the user's terminal: what `sanitizeForTerminal` shows, except plain colour.
 * A test runner or a compiler colours its output with SGR sequences (`ESC [ 31 m`, `ESC [ 1 ; 32 m`,
 * `ESC [ m`): they change how the following text looks and nothing else (no cursor move, no title, no
 * clipboard, no reply from the terminal), so they are let through as terminals users trust do
 * (`less -R`, CI logs). Only the strict form passes: ESC, `[`, digits and `;` only (at most 32 of
 * them), `m`. Everything else stays escaped: OSC, DCS, cursor moves and clears, private or
 * colon-separated parameters, the 8-bit CSI (U+009B).
 *
 * A colour a command leaves open would paint harness's own lines after it: a line (`commandLine`)
 * ends with a reset when it let a colour through, and a stream (`CommandOutputStream`) ends with one
 * when its last colour was not a reset. Without colour (NO_COLOR, not a terminal) the SGR sequences
 * are dropped instead of shown as escapes: they are only styling.
 *
 * Only for terminal text: transcripts, JSON and stream-json keep the bytes as they were.
 */
import { StringDecoder } from "node:string_decoder";
import { sanitizeForTerminal } from "./sanitize.js";

/** ESC [ params m: the only sequence let through. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is what is matched
const SGR = /\u001b\[([0-9;]{0,32})m/g;
/**
 * Kept back at the end of a chunk until more comes: what may still become an SGR sequence, and a
 * carriage return (with a newline after it, it is one line end, not two).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is what is matched
const HELD_BACK = /(?:\r|\u001b(?:\[[0-9;]{0,32})?)$/;

export const RESET = "\u001b[0m";

/** True when `params` leave the terminal's attributes at their defaults (`ESC [ m`, `ESC [ 0 m`). */
function isReset(params: string): boolean {
  return /^0*$/.test(params);
}

/**
 * `text` for the terminal: SGR kept (`colour`) or dropped, everything else as `sanitizeForTerminal`
 * shows it, cut after `maxChars` visible characters. `open`: whether the last SGR kept left a
 * colour on (undefined: none was kept).
 */
function render(
  text: string,
  colour: boolean,
  maxChars: number,
): { text: string; open: boolean | undefined } {
  let out = "";
  let open: boolean | undefined;
  let shown = 0;
  let last = 0;
  const plain = (part: string): boolean => {
    const clean = sanitizeForTerminal(part);
    if (shown + clean.length <= maxChars) {
      out += clean;
      shown += clean.length;
      return true;
    }
    out += `${clean.slice(0, maxChars - shown)}…`;
    shown = maxChars;
    return false;
  };
  for (const match of text.matchAll(SGR)) {
    if (!plain(text.slice(last, match.index))) return { text: out, open };
    last = match.index + match[0].length;
    if (!colour) continue;
    out += match[0];
    open = !isReset(match[1] ?? "");
  }
  plain(text.slice(last));
  return { text: out, open };
}

/**
 * One line of a command's output, cut to `maxChars` visible characters (a colour sequence is never
 * cut in half): colours kept when `colour`, and a reset at its end when it left one open.
 */
export function commandLine(line: string, colour: boolean, maxChars = Number.POSITIVE_INFINITY): string {
  const { text, open } = render(line, colour, maxChars);
  return open === true ? `${text}${RESET}` : text;
}

/**
 * A command's output stream (stdout or stderr) chunk by chunk, as `harness exec` shows it on a
 * terminal: UTF-8 decoded across chunks, an SGR sequence split between chunks kept whole, and a
 * reset at the end (`end`) when a colour was left on.
 */
export class CommandOutputStream {
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";
  private open = false;

  constructor(private readonly colour: boolean) {}

  /** The chunk as the terminal gets it (possibly empty: all of it may be the start of a sequence). */
  write(chunk: Buffer): string {
    let text = this.pending + this.decoder.write(chunk);
    const prefix = HELD_BACK.exec(text);
    this.pending = prefix === null ? "" : prefix[0];
    if (prefix !== null) text = text.slice(0, prefix.index);
    return this.show(text);
  }

  /** What is left: an unfinished sequence (shown as escapes), then a reset if a colour is on. */
  end(): string {
    const rest = this.show(this.pending + this.decoder.end());
    this.pending = "";
    const reset = this.open ? RESET : "";
    this.open = false;
    return rest + reset;
  }

  private show(text: string): string {
    if (text === "") return "";
    const rendered = render(text, this.colour, Number.POSITIVE_INFINITY);
    if (rendered.open !== undefined) this.open = rendered.open;
    return rendered.text;
  }
}
