/**
 * Short helper commands harness runs next to the agent's (the kill, health and readiness checks,
 * ending leftover processes): their stdout, or a rejection. A wedged container must not hang the
 * caller, so every step has a deadline and the stream is dropped when it passes.
 */
import type Docker from "dockerode";
import { Demuxer } from "./demux.js";
import { startExec } from "./exec-start.js";

/**
 * Runs a short helper command and returns its stdout (stderr dropped). Rejects if it cannot run,
 * exits nonzero, or is not done within `deadlineMs`.
 */
export async function runSimpleExec(
  container: Docker.Container,
  cmd: string[],
  user: string,
  deadlineMs = 15_000,
): Promise<string> {
  const { exec, stream } = await startExec(
    container,
    { Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true, Tty: false },
    deadlineMs,
    "a helper exec",
  );
  const chunks: Buffer[] = [];
  const demuxer = new Demuxer((name, payload) => {
    if (name === "stdout") chunks.push(payload);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`helper exec still running after ${deadlineMs} ms`)),
        deadlineMs,
      );
      stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", reject);
    });
  } finally {
    clearTimeout(timer);
    stream.destroy();
  }
  const info = await exec.inspect();
  const out = Buffer.concat(chunks).toString("utf8");
  if (info.ExitCode !== 0) throw new Error(`helper exec exited with ${info.ExitCode}: ${out.slice(0, 200)}`);
  return out;
}
