/**
 * commander's usage errors (an unknown option, a missing argument, a bad choice) as one line, like
 * every other error harness prints: `harness: unknown option '--bogus' (see harness exec --help)`,
 * its "Did you mean" suggestion kept, instead of the error followed by the whole help.
 */
import type { Command } from "commander";

/** Sets the one-line form on `command` and every command below it. */
export function oneLineUsageErrors(command: Command, path: readonly string[] = []): void {
  const name = [...path, command.name()];
  const help = `${name.join(" ")} --help`;
  command.showHelpAfterError(false).configureOutput({
    outputError: (text, write) => {
      const message = text
        .trim()
        .replace(/^error: /, "")
        .replace(/\s*\n\s*/g, " ");
      write(`harness: ${message} (see ${help})\n`);
    },
  });
  for (const sub of command.commands) oneLineUsageErrors(sub, name);
}
