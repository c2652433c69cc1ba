/** `harness exec --workspace DIR -- CMD`: one command through the sandbox path, exiting with its code. */
import { type CliFlags, loadSandboxConfig, type SandboxConfig } from "../../config.js";
import type { EgressDenial, ExecResult } from "../../sandbox/sandbox.js";
import { visibleControls } from "../../text/visible-controls.js";
import { EXIT } from "../exit-codes.js";
import type { Interrupts } from "../session/interrupts.js";
import { processReviewIo, reviewCopyChanges } from "../setup/copy-changes.js";
import { newCopyId, openSandbox } from "../setup/sandbox-from-config.js";
import { ExecOutput } from "./exec-output.js";
import { IGNORED_STDIN_LINE, type IgnoredStdin, watchIgnoredStdin } from "./ignored-stdin.js";

export async function execCommand(args: string[], flags: CliFlags, interrupts: Interrupts): Promise<number> {
  const output = new ExecOutput({ stdout: process.stdout, stderr: process.stderr });
  const config = loadSandboxConfig(process.env, flags);
  const stdin = watchIgnoredStdin();
  try {
    return await execInSandbox(commandLine(args), config, flags, interrupts, output, stdin);
  } finally {
    stdin.stop();
  }
}

async function execInSandbox(
  command: string,
  config: SandboxConfig,
  flags: CliFlags,
  interrupts: Interrupts,
  output: ExecOutput,
  stdin: IgnoredStdin,
): Promise<number> {
  const signal = interrupts.begin();
  await using sandbox = await openSandbox(config, {
    session: interrupts.session,
    keepCopyAs: { id: newCopyId("exec"), command: "exec" },
  });
  if (output.broken) return EXIT.brokenPipe;
  // Backpressure: a slow reader pauses the command instead of filling harness's memory; a reader
  // that goes away (`| head -1`) stops the command, killed in the container like a cancel.
  let result: ExecResult;
  try {
    result = await sandbox.exec(command, {
      signal: AbortSignal.any([signal, output.signal]),
      onOutput: output.write,
    });
  } finally {
    output.finish();
  }
  if (stdin.stop()) output.note(IGNORED_STDIN_LINE);
  for (const notice of result.notices) output.note(notice);
  for (const line of egressDenialLines(result.egressDenied ?? [])) output.note(line);
  // A broken pipe is reported by the exit code alone, as a shell does; harness cancelled the command.
  if (!output.broken && (result.timedOut || result.isCanceled || result.oomKilled))
    output.note(result.shortMessage);
  if (result.timedOut && (config.publish?.length ?? 0) > 0) {
    output.note(
      `the published ports closed with it: a server run by harness exec needs --timeout SECONDS as long as it should serve (it had ${config.timeoutMs / 1000})`,
    );
  }
  // Copy mode: the command's changes are shown, and applied only when asked, before the exit.
  await reviewCopyChanges(sandbox, flags.apply, processReviewIo(interrupts.session.signal));
  if (output.broken) return EXIT.brokenPipe;
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

/**
 * `network: refused HOST:PORT (reason)`, once per distinct refusal. Host and reason are what the
 * sandbox asked for: controls shown as escapes, on one line.
 */
export function egressDenialLines(denied: readonly EgressDenial[]): string[] {
  const field = (text: string) => visibleControls(text.replace(/[\r\n]+/g, " ")).slice(0, 300);
  const lines = denied.map(
    ({ host, port, reason }) => `network: refused ${field(host)}:${port} (${field(reason)})`,
  );
  return [...new Set(lines)];
}
