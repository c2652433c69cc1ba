/**
 * `harness shell --engine kubernetes`: an interactive TTY shell in the pod, as the sandbox user (via
 * run-as.py), in the workspace, with the same start-up as Docker's (docker/interactive-shell.ts: a
 * Landlock domain of its own first, nothing read from the home directory the sandbox can plant fifos in). The terminal's size follows
 * the user's through the exec's resize channel.
 */
import { PassThrough } from "node:stream";
import { Exec } from "@kubernetes/client-node";
import { domainShellCommand, type ShellIo } from "../docker/interactive-shell.js";
import { asUser } from "./api/pod-command.js";
import type { PodTarget } from "./api/pod-exec.js";

export async function runPodShell(
  target: PodTarget,
  user: string,
  workdir: string,
  io: ShellIo,
  /** `KEY=value` entries added to its environment (allowlist mode's proxy variables). */
  extraEnv: readonly string[] = [],
): Promise<number> {
  // python3 is there (run-as.py needs it), so the shell always starts through own-domain.py.
  const command = asUser(user, domainShellCommand(workdir, extraEnv));
  const input = new PassThrough();
  const wasRaw = io.stdin.isTTY ? io.stdin.isRaw : false;
  if (io.stdin.isTTY) io.stdin.setRawMode(true);
  io.stdin.pipe(input);
  let code = 1;
  try {
    const socket = (await new Exec(target.kc).exec(
      target.namespace,
      target.pod,
      target.container,
      command,
      io.stdout,
      null,
      input,
      true,
      (status) => {
        const cause = status.details?.causes?.find((c) => c.reason === "ExitCode")?.message;
        code = status.status === "Success" ? 0 : Number(cause ?? 1);
      },
    )) as unknown as { on(event: "close", listener: () => void): void; close(): void };
    await new Promise<void>((resolve) => {
      socket.on("close", resolve);
      // The session's end (SIGHUP, SIGTERM) closes the connection; the sandbox's end stops the shell.
      if (io.signal?.aborted) socket.close();
      io.signal?.addEventListener("abort", () => socket.close(), { once: true });
    });
  } finally {
    io.stdin.unpipe(input);
    io.stdin.pause();
    if (io.stdin.isTTY) io.stdin.setRawMode(wasRaw);
  }
  return code;
}
