/**
 * `harness exec` gives the command no input: its stdin is at end of file from the start, on Docker
 * and on Kubernetes alike (the executor carries a command's output, not its input). Piped input
 * (`echo data | harness exec -- cat`) would be lost without a word, so stdin is watched while the
 * command runs: when anything arrives, one line says it was not passed and what to do instead. A
 * terminal is not watched (nothing is piped), nor is anything read past the first chunk.
 */

export interface IgnoredStdin {
  /** Stops watching; true when input arrived that the command never saw. */
  stop(): boolean;
}

export function watchIgnoredStdin(stdin: NodeJS.ReadStream = process.stdin): IgnoredStdin {
  if (stdin.isTTY) return { stop: () => false };
  let arrived = false;
  const onData = (chunk: Buffer | string) => {
    if (chunk.length === 0) return;
    arrived = true;
    // Nothing more is read: the rest stays in the pipe, and `yes | harness exec` costs nothing.
    stdin.pause();
    stdin.off("data", onData);
  };
  stdin.on("data", onData);
  stdin.on("error", () => {});
  return {
    stop: () => {
      stdin.off("data", onData);
      // An open pipe would keep harness from exiting.
      stdin.destroy();
      return arrived;
    },
  };
}

/** The line said when input arrived. */
export const IGNORED_STDIN_LINE =
  "stdin was not passed to the command (harness exec gives it none): put the input in a workspace file and redirect inside, e.g. harness exec -- 'cmd < input.txt'";
