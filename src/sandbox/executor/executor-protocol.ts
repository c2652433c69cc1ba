/**
 * What the host and the executor (executor.py, beside this file) agree on: how it is started, and
 * its frames: 1 byte kind, 16 bytes nonce (ASCII hex), 4 bytes big-endian payload length, payload.
 * executor.py keeps its own copy of these (it is another language); a unit test checks both agree.
 */
import { programText } from "../exec/program-text.js";

/** The name it goes by in `ps`: the loader's first argument. */
export const EXECUTOR_NAME = "harness-executor";

/**
 * What the exec runs: a loader that reads the program from stdin (10 digits of length, then the
 * program) and runs it, so that `ps` in the sandbox shows one short line instead of the whole
 * program, and the same stdin then carries the frames.
 */
export const EXECUTOR_LOADER = [
  "import os",
  "def take(n):",
  "    b = b''",
  "    while len(b) < n:",
  "        c = os.read(0, n - len(b))",
  "        if not c: raise SystemExit(3)",
  "        b += c",
  "    return b",
  "exec(compile(take(int(take(10))), 'harness-executor', 'exec'))",
].join("\n");

/** Frame kinds, one byte each. */
export const FRAME = {
  hello: "H",
  started: "S",
  stdout: "o",
  stderr: "e",
  end: "X",
  failed: "F",
  run: "R",
  kill: "K",
  census: "C",
  bye: "B",
} as const;

/** Bytes before a frame's payload: kind, nonce, length. */
export const FRAME_HEADER_BYTES = 21;

/** The nonce of frames that belong to no call (hello, census). */
export const NO_NONCE = "0".repeat(16);

/** The executor's source, read once. */
export function executorSource(): string {
  return programText(new URL("./executor.py", import.meta.url));
}
