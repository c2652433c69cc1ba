/**
 * How the relay of allowlist mode (egress-relay.py, beside this file) is started, and what it says.
 */
import { programText } from "../../exec/program-text.js";

/** Where the gateway's socket directory appears inside the container (read-only). */
export const EGRESS_MOUNT = "/run/harness-egress";

/** The relay's first line when the image has no python3. */
export const NO_PYTHON = "ERR no-python3";

/** How the relay's first line starts when the container does not see the gateway's socket (egress-relay.py says it). */
export const SOCKET_MISSING = "ERR socket-missing";

/** The relay's source, read once. */
export function relaySource(): string {
  return programText(new URL("./egress-relay.py", import.meta.url));
}

/**
 * The exec's command: sh first, so an image without python3 gets a line saying so instead of an OCI
 * error. `-I` ignores PYTHON* variables and the home's site-packages (the home is the sandbox's to
 * write); `-S` skips `site` altogether. `user`: the sandbox user's "uid:gid", whose uid it acts with.
 */
export function relayCommand(socketPath: string, user: string): string[] {
  const launch = `command -v python3 >/dev/null 2>&1 || { echo '${NO_PYTHON}'; exit 127; }; exec python3 -I -S -c "$1" "$2" "$3"`;
  return ["/bin/sh", "-c", launch, "harness-egress-relay", relaySource(), socketPath, user];
}
