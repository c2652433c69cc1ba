/** How the workspace gets into the sandbox: mounted (bind) or copied (copy), and copy mode's limits. */
import { ConfigError } from "../errors.js";
import { type IsolationKind, SANDBOX_DEFAULTS } from "../sandbox/sandbox-request.js";
import { byteSize, positiveNumber } from "./parsers.js";
import { type Setting, sizeText } from "./setting.js";

const ISOLATIONS: readonly IsolationKind[] = ["bind", "copy"];

export const ISOLATION_SETTINGS = {
  /** Flags only: a `.env` in the workspace must not be able to switch copy off. */
  isolation: {
    flag: "--isolation <mode>",
    help: "bind: mount the workspace; copy: work on a copy, show the changes, apply on request",
    // Kubernetes copies: a cluster cannot mount this machine's directory (config.ts decides).
    defaultText: "bind, or copy with --engine kubernetes",
    choices: ISOLATIONS,
    parse: (text: string, name: string): IsolationKind => {
      if (!(ISOLATIONS as readonly string[]).includes(text))
        throw new ConfigError(`${name} must be bind or copy, got '${text}'`);
      return text as IsolationKind;
    },
    perTask: true,
  },
  copyLimit: {
    flag: "--copy-limit <size>",
    help: "copy mode: most file content copied in and out",
    defaultText: sizeText(SANDBOX_DEFAULTS.copyLimitBytes),
    parse: byteSize,
  },
  copyMaxFiles: {
    flag: "--copy-max-files <n>",
    help: "copy mode: most files, directories and symlinks copied in and out",
    defaultText: String(SANDBOX_DEFAULTS.copyMaxFiles),
    parse: (text: string, name: string) => positiveNumber(name, text),
  },
  apply: {
    flag: "--apply",
    help: "copy mode: apply the sandbox's changes to the workspace without asking",
    negation: "copy mode: show the sandbox's changes but never apply them",
  },
} as const satisfies Record<string, Setting>;
