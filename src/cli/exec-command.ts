/** `harness exec --workspace DIR -- CMD`: one command through the sandbox path, exiting with its code. */
import { type CliFlags, loadSandboxConfig } from "../config.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { reviewCopyChanges } from "./copy-changes.js";
import { EXIT } from "./exit-codes.js";
import { openSandbox } from "./sandbox-from-config.js";

export async function execCommand(args: string[], flags: CliFlags, signal: AbortSignal): Promise<number> {
  const config = loadSandboxConfig(process.env, flags);
  const command = commandLine(args);
  await using sandbox = await openSandbox(config);
  const write = (stream: NodeJS.WriteStream, chunk: Buffer) => {
    // Piped output stays byte-exact; a terminal gets no control sequences from the sandbox.
    if (stream.isTTY) stream.write(sanitizeForTerminal(chunk.toString("utf8")));
    else stream.write(chunk);
  };
  const result = await sandbox.exec(command, {
    signal,
    onOutput: (name, chunk) => write(name === "stdout" ? process.stdout : process.stderr, chunk),
  });
  for (const notice of result.notices) process.stderr.write(`harness: ${notice}\n`);
  if (result.timedOut || result.isCanceled || result.oomKilled)
    process.stderr.write(`harness: ${result.shortMessage}\n`);
  // Copy mode: the command's changes are shown, and applied only when asked, before the exit.
  await reviewCopyChanges(sandbox, flags.apply);
  if (result.timedOut) return EXIT.timedOut;
  if (result.isCanceled) return EXIT.interrupted;
  return result.exitCode ?? EXIT.error;
}

/**
 * One argument is a shell command line, used as is (`harness exec -- 'make && make test'`). Several
 * are an argv, as `docker exec` takes it: each is quoted, so `-- python3 -c "print('a b')"` keeps
 * its argument whole.
 */
export function commandLine(args: string[]): string {
  if (args.length === 1) return args[0] ?? "";
  return args
    .map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`))
    .join(" ");
}
