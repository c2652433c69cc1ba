/** How the per-call path's wrapper (wrapper.sh, beside this file) is started, and how it marks its output. */
import { programText } from "../../exec/program-text.js";

/** Starts the marker line; `\x1e\x1f` never occurs in ordinary text output. */
export const MARKER_LEAD = "\u001e\u001fHARNESS-END:";

/** Starts the line the wrapper prints first, before the command runs: nonce, its pid, its start time. */
export const START_LEAD = "\u001e\u001fHARNESS-START:";

/** The wrapper's source, read once. */
export function wrapperScript(): string {
  return programText(new URL("./wrapper.sh", import.meta.url));
}

/** The exec's argv for one command: nonce, workspace dir, command, start dir, then the two leads. */
export function wrapperCommand(nonce: string, workdir: string, command: string, startDir: string): string[] {
  return [
    "/bin/sh",
    "-c",
    wrapperScript(),
    "harness-exec",
    nonce,
    workdir,
    command,
    startDir,
    START_LEAD,
    MARKER_LEAD,
  ];
}
