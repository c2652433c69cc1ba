/**
 * Drives a sandbox's `shell()` (the API behind `harness shell`) from a test: lines typed into it,
 * what its terminal showed, its exit code.
 */
import { PassThrough } from "node:stream";
import type { ShellIo } from "../../src/sandbox/docker/interactive-shell.js";

export interface ShellDriver {
  /** Types a line into the shell. */
  type(line: string): void;
  /** Everything the terminal showed so far. */
  seen(): string;
  /** Resolves with the shell's exit code. */
  exited: Promise<number>;
}

export function driveShell(sandbox: { shell(io: ShellIo): Promise<number> }): ShellDriver {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let seen = "";
  stdout.on("data", (chunk: Buffer) => {
    seen += chunk.toString();
  });
  const exited = sandbox.shell({
    stdin: stdin as unknown as NodeJS.ReadStream,
    stdout: stdout as unknown as NodeJS.WriteStream,
  });
  return { type: (line) => stdin.write(`${line}\n`), seen: () => seen, exited };
}
