/**
 * `harness shell`: an interactive TTY shell in the sandbox, as the same user, in the workspace.
 * The user asked for a terminal into the sandbox, so its output reaches their terminal as is.
 */
import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import { ownDomainSource } from "../executor/executor-protocol.js";

export interface ShellIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  /** Aborted when the session ends (SIGHUP, SIGTERM): the shell's connection is closed. */
  signal?: AbortSignal;
}

/**
 * An interactive bash reads files from the home directory as it starts, and the sandbox can plant a
 * fifo at any of them (the home is its tmpfs): one at ~/.inputrc or ~/.terminfo hangs the shell
 * before its first prompt. So readline reads the image's inputrc, and ncurses the image's terminfo
 * directory that has $TERM (found here, so it never falls through to ~/.terminfo); the container's
 * HISTFILE is /dev/null (container-spec.ts).
 */
export const SHELL_SCRIPT = `cd "$1" 2>/dev/null
for d in /etc/terminfo /lib/terminfo /usr/share/terminfo /usr/lib/terminfo; do
  [ -r "$d/\${TERM%"\${TERM#?}"}/$TERM" ] && { TERMINFO=$d; export TERMINFO; break; }
done
if command -v bash >/dev/null 2>&1; then exec bash --norc -i; else exec sh -i; fi`;

/**
 * harness's own variables for the shell, after the caller's so that they win. The sandbox uid has no
 * passwd entry; a fixed prompt avoids bash's "I have no name!".
 */
const SHELL_ENV = ["TERM=xterm-256color", "PS1=sandbox:\\w\\$ ", "INPUTRC=/etc/inputrc"];

/**
 * The shell's command, as the sandbox user: own-domain.py puts it in a Landlock domain of its own
 * before anything else runs, so that nothing it starts can trace or write the memory of a command
 * the executor runs beside it (each in its own domain), nor the reverse. `env` (devcontainer.json's
 * containerEnv, allowlist mode's proxies) is given to it as arguments, set only inside the domain:
 * a PROMPT_COMMAND or LD_PRELOAD there reaches the shell, never what enters the domain.
 */
export function domainShellCommand(workdir: string, env: readonly string[]): string[] {
  return [
    "python3",
    "-I",
    "-S",
    "-c",
    ownDomainSource(),
    "harness-shell",
    ...env,
    ...SHELL_ENV,
    "--",
    "/bin/sh",
    "-c",
    SHELL_SCRIPT,
    "sh",
    workdir,
  ];
}

/** Said in the terminal when the shell starts without a domain of its own (the image has no python3). */
export const NO_DOMAIN_NOTICE =
  "harness shell: the image has no python3, so this shell is not kept apart from harness's commands by a Landlock domain of its own (docs/security.md)";

/**
 * Runs the shell until it exits; resolves with its exit code. `env`: `KEY=value` entries added to its
 * environment (devcontainer.json's, allowlist mode's proxy variables). `inDomain`: false where the
 * image has no python3 to enter the domain with; the shell then starts without one and says so.
 */
export async function runInteractiveShell(
  container: Docker.Container,
  user: string,
  workdir: string,
  io: ShellIo,
  env: readonly string[] = [],
  inDomain = true,
): Promise<number> {
  const exec = await container.exec({
    Cmd: inDomain
      ? domainShellCommand(workdir, env)
      : ["/bin/sh", "-c", `echo "${NO_DOMAIN_NOTICE}" >&2\n${SHELL_SCRIPT}`, "sh", workdir],
    User: user,
    WorkingDir: workdir,
    Env: inDomain ? [] : [...env, ...SHELL_ENV],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: true,
  });
  const stream: Duplex = await exec.start({ hijack: true, stdin: true, Tty: true });
  const resize = () => {
    if (io.stdout.columns && io.stdout.rows) {
      exec.resize({ h: io.stdout.rows, w: io.stdout.columns }).catch(() => {});
    }
  };
  const wasRaw = io.stdin.isTTY ? io.stdin.isRaw : false;
  if (io.stdin.isTTY) io.stdin.setRawMode(true);
  io.stdin.pipe(stream);
  stream.pipe(io.stdout, { end: false });
  io.stdout.on("resize", resize);
  resize();
  try {
    await new Promise<void>((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
      if (io.signal?.aborted) stream.destroy();
      io.signal?.addEventListener("abort", () => stream.destroy(), { once: true });
    });
  } finally {
    io.stdin.unpipe(stream);
    io.stdin.pause();
    if (io.stdin.isTTY) io.stdin.setRawMode(wasRaw);
    io.stdout.off("resize", resize);
  }
  // Ended by the session: the shell may still be running (the sandbox's end stops it), with no code yet.
  const info = await exec.inspect();
  return info.ExitCode ?? 1;
}
