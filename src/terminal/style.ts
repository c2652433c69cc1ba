/**
 * Colours for the terminal, or none. Off when NO_COLOR is set (any value, https://no-color.org) or the
 * stream is not a TTY; FORCE_COLOR (except "0"/"false") turns them on and wins over NO_COLOR, as in Node.
 */

export interface Style {
  /** A command about to run. */
  command(text: string): string;
  /** Command output, secondary text. */
  dim(text: string): string;
  /** Failures. */
  error(text: string): string;
  /** Limits, notices. */
  warn(text: string): string;
  /** Success. */
  ok(text: string): string;
  /** Emphasis. */
  bold(text: string): string;
}

/** Whether to colour output written to `stream`. Reads `env` when called. */
export function colorEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  const force = env["FORCE_COLOR"];
  if (force !== undefined) return force !== "0" && force.toLowerCase() !== "false";
  if (env["NO_COLOR"] !== undefined) return false;
  if (env["TERM"] === "dumb") return false;
  return stream.isTTY === true;
}

const sgr = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;
const plain = (text: string) => text;

export function createStyle(enabled: boolean): Style {
  if (!enabled) return { command: plain, dim: plain, error: plain, warn: plain, ok: plain, bold: plain };
  return {
    command: sgr(33, 39),
    dim: sgr(2, 22),
    error: sgr(31, 39),
    warn: sgr(33, 39),
    ok: sgr(32, 39),
    bold: sgr(1, 22),
  };
}
