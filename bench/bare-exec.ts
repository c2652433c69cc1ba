/**
 * The reference: the minimal correct dockerode exec. Create, start hijacked, read the multiplexed
 * stream to its end (counting payload bytes, keeping none), then `exec.inspect()` for the exit code.
 */
import type { Duplex } from "node:stream";
import type Docker from "dockerode";

export interface BareResult {
  exitCode: number | null;
  stdoutBytes: number;
  stderrBytes: number;
  /** Extra inspects needed because the first one still said Running (0 normally). */
  inspectRetries: number;
  durationMs: number;
}

/**
 * Counts the payload bytes of Docker's multiplexed stream (8-byte headers: type, 3 zero bytes,
 * big-endian length) without copying or keeping any payload.
 */
export class FrameCounter {
  stdout = 0;
  stderr = 0;
  private readonly header = Buffer.alloc(8);
  private headerFill = 0;
  private remaining = 0;
  private type = 0;

  push(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.remaining === 0) {
        const n = Math.min(8 - this.headerFill, chunk.length - i);
        chunk.copy(this.header, this.headerFill, i, i + n);
        this.headerFill += n;
        i += n;
        if (this.headerFill < 8) return;
        this.type = this.header[0] ?? 0;
        this.remaining = this.header.readUInt32BE(4);
        this.headerFill = 0;
        continue;
      }
      const n = Math.min(this.remaining, chunk.length - i);
      if (this.type === 1) this.stdout += n;
      else if (this.type === 2) this.stderr += n;
      this.remaining -= n;
      i += n;
    }
  }
}

export async function bareExec(
  container: Docker.Container,
  cmd: string[],
  user: string,
): Promise<BareResult> {
  const started = performance.now();
  const exec = await container.exec({
    Cmd: cmd,
    User: user,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream: Duplex = await exec.start({ hijack: true, stdin: false });
  const counter = new FrameCounter();
  await new Promise<void>((resolve, reject) => {
    stream.on("data", (chunk: Buffer) => counter.push(chunk));
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", reject);
  });
  stream.destroy();
  let info = await exec.inspect();
  let inspectRetries = 0;
  while (info.Running && inspectRetries < 50) {
    inspectRetries += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
    info = await exec.inspect();
  }
  return {
    exitCode: info.ExitCode,
    stdoutBytes: counter.stdout,
    stderrBytes: counter.stderr,
    inspectRetries,
    durationMs: performance.now() - started,
  };
}
