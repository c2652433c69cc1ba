/**
 * What the host and the executor (executor.py, beside this file) agree on: how it is started, and
 * its frames: 1 byte kind, 16 bytes nonce (ASCII hex), 4 bytes big-endian payload length, payload.
 * executor.py keeps its own copy of these (it is another language); a unit test checks both agree.
 */
import { programText } from "../exec/program-text.js";

/** The name it goes by in `ps`: the loader's first argument. */
export const EXECUTOR_NAME = "harness-executor";

/**
 * What the exec runs: a loader that reads two texts from stdin (each 10 digits of length, then the
 * text), runs the first as the module `own_domain` (own-domain.py: the Landlock domain each command
 * enters, shared with `harness shell`) and the second, the executor, as the program, so that `ps` in
 * the sandbox shows one short line instead of the whole program, and the same stdin then carries the
 * frames.
 */
export const EXECUTOR_LOADER = [
  "import os, sys, types",
  "def take(n):",
  "    b = b''",
  "    while len(b) < n:",
  "        c = os.read(0, n - len(b))",
  "        if not c: raise SystemExit(3)",
  "        b += c",
  "    return b",
  "m = types.ModuleType('own_domain')",
  "exec(compile(take(int(take(10))), 'own-domain', 'exec'), m.__dict__)",
  "sys.modules['own_domain'] = m",
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

/** own-domain.py's source: the Landlock domain a command or `harness shell` enters. */
export function ownDomainSource(): string {
  return programText(new URL("./own-domain.py", import.meta.url));
}

/** What the loader reads before the frames: own-domain.py, then the executor, each length-prefixed. */
export function executorPayload(): Buffer {
  const texts = [ownDomainSource(), programText(new URL("./executor.py", import.meta.url))];
  return Buffer.concat(
    texts.map((text) => {
      const bytes = Buffer.from(text, "utf8");
      return Buffer.concat([Buffer.from(String(bytes.length).padStart(10, "0")), bytes]);
    }),
  );
}
