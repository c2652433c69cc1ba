/** `harness restore-git ID`: puts back the git files a bind-mode run's end moved aside. */
import { restoreGitAside } from "../../sandbox/host/git/git-aside.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { EXIT } from "../exit-codes.js";

/** Where the command writes and what it reads; tests pass their own. */
export interface RestoreGitIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Env: XDG_STATE_HOME. */
  env: NodeJS.ProcessEnv;
}

/** Exit 0 when everything went back; 1 when something was refused (it stays in the quarantine). */
export async function restoreGitCommand(id: string, io: RestoreGitIo = processIo()): Promise<number> {
  const result = await restoreGitAside(id, io.env);
  for (const path of result.restored) io.stdout(`restored ${sanitizeForTerminal(path)}\n`);
  for (const refusal of result.refused)
    io.stderr(
      `harness: not restored: ${sanitizeForTerminal(refusal.path)} (${sanitizeForTerminal(refusal.reason)})\n`,
    );
  if (result.refused.length === 0) return EXIT.ok;
  io.stderr(`harness: what was not restored is still in ${result.dir}\n`);
  return EXIT.error;
}

function processIo(): RestoreGitIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
  };
}
