/**
 * Docker's half of `--publish` (the rest is `../../publish/`): one connection's forwarder is one
 * engine exec, as the sandbox user, whose attach stream carries the bytes: up as its stdin, down as
 * its stdout (multiplexed, since there is no TTY). Its end is the stream's end, then
 * `exec.inspect()` for the exit status.
 */
import type Docker from "dockerode";
import { forwardCommand } from "../../publish/forward-command.js";
import type { ForwarderEnd, OpenForwarder } from "../../publish/forwarder-exec.js";
import { Demuxer } from "../exec/demux.js";
import { startExec } from "../exec/exec-start.js";

/** Creating and starting the exec; a wedged engine must not hold the client forever. */
const START_DEADLINE_MS = 15_000;

/**
 * Forwarders in `container()` (the sandbox's container now: a recovery may have replaced it since
 * the listener started), run as `user` ("uid:gid").
 */
export function dockerForwarder(container: () => Docker.Container, user: string): OpenForwarder {
  return async (port, output) => {
    const { exec, stream } = await startExec(
      container(),
      {
        Cmd: forwardCommand(port),
        User: user,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      },
      START_DEADLINE_MS,
      "a published port's forwarder",
    );
    const demuxer = new Demuxer((name, payload) =>
      name === "stderr" ? output.stderr(payload) : output.stdout(payload),
    );
    const streamDone = new Promise<void>((resolve) => {
      stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
      stream.once("end", resolve);
      stream.once("close", resolve);
      // A write after the stream broke errors too: every error ends the stream, none is thrown.
      stream.on("error", () => resolve());
    });
    const ended = streamDone.then(() =>
      exec.inspect().then(
        (info): ForwarderEnd => ({ exitCode: info.ExitCode ?? undefined }),
        (): ForwarderEnd => ({ exitCode: undefined }),
      ),
    );
    return {
      write: (chunk) => {
        if (stream.destroyed) return Promise.reject(new Error("the forwarder's stream is closed"));
        if (stream.write(chunk)) return Promise.resolve();
        return new Promise((resolve) => {
          stream.once("drain", resolve);
          void streamDone.then(resolve);
        });
      },
      endInput: () => stream.end(),
      pause: () => stream.pause(),
      resume: () => stream.resume(),
      close: () => stream.destroy(),
      ended,
    };
  };
}
