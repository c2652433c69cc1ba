/** `harness recover`: finishes or undoes every copy-mode apply whose process was killed mid-way. */
import { recoverApplies } from "../../sandbox/copy/journal/apply-commit.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { EXIT } from "../exit-codes.js";

export async function recoverCommand(
  env: NodeJS.ProcessEnv = process.env,
  stderr: (text: string) => void = (text) => process.stderr.write(text),
): Promise<number> {
  const done = await recoverApplies(env);
  if (done.length === 0) stderr("harness: no interrupted copy-mode apply to recover\n");
  for (const { line } of done) stderr(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  return EXIT.ok;
}
