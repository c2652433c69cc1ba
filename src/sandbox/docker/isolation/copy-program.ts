/**
 * Copy mode's listing program (../../copy/listing/) as a Docker exec: its stdout demuxed into a
 * stream the caller reads at its own pace (the engine's stream paused while that one is full), and
 * a check, once it is read, that the program exited 0 (a listing cut short must not look like a
 * workspace with fewer files).
 */
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import type { ArchiveRead } from "../../copy/sandbox-archive.js";
import { Demuxer } from "../exec/demux.js";
import { startExec } from "../exec/exec-start.js";

const START_DEADLINE_MS = 15_000;

export async function runCopyProgram(
  container: Docker.Container,
  user: string,
  argv: string[],
): Promise<ArchiveRead> {
  const { exec, stream } = await startExec(
    container,
    { Cmd: argv, User: user, AttachStdout: true, AttachStderr: true, Tty: false },
    START_DEADLINE_MS,
    "the workspace listing",
  ).catch((error: unknown) => {
    throw new SandboxError(`reading the sandbox's workspace failed: ${(error as Error).message}`, {
      cause: error,
      containerId: container.id,
    });
  });
  const stdout = new PassThrough({ highWaterMark: 1024 * 1024 });
  let stderr = "";
  const demuxer = new Demuxer((name, payload) => {
    if (name === "stderr") stderr = `${stderr}${payload.toString("utf8")}`.slice(-2000);
    else if (!stdout.write(payload)) stream.pause();
  });
  stdout.on("drain", () => stream.resume());
  // The reader stopping early (a limit) lets go of the exec.
  stdout.on("close", () => stream.destroy());
  const ended = new Promise<void>((resolve) => {
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", (error) => {
      stdout.destroy(error);
      resolve();
    });
  }).then(() => {
    if (!stdout.destroyed) stdout.end();
  });
  const check = async () => {
    await ended;
    const info = await exec.inspect();
    if (info.ExitCode !== 0) {
      throw new SandboxError(
        `reading the sandbox's workspace failed (exit ${info.ExitCode}): ${stderr.trim().split("\n").slice(-3).join("; ")}`,
        { containerId: container.id },
      );
    }
  };
  return { stream: stdout, check };
}
