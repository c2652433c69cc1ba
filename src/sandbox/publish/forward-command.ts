/**
 * How the forwarder of one published-port connection (port-forward.py, beside this file) is started,
 * on any engine: the argv of its exec, which the engine runs as the sandbox user.
 */
import { programText } from "../exec/program-text.js";

/** What the forwarder says on stderr, and its exit status, when nothing listens on the port. */
export const NOTHING_LISTENING_STATUS = 2;
/** The exec's exit status when the image has no python3. */
export const NO_PYTHON_STATUS = 127;

/**
 * sh first, so an image without python3 says so instead of an OCI error. `-I` ignores PYTHON*
 * variables and the home's site-packages (the home is the sandbox's to write); `-S` skips `site`.
 */
export function forwardCommand(port: number): string[] {
  const launch = `command -v python3 >/dev/null 2>&1 || { echo 'no python3 in the sandbox image' >&2; exit ${NO_PYTHON_STATUS}; }; exec python3 -I -S -c "$1" "$2"`;
  const source = programText(new URL("./port-forward.py", import.meta.url));
  return ["/bin/sh", "-c", launch, "harness-publish", source, String(port)];
}
