/**
 * One setting, declared once: its flag, its environment variable, how its text is read, its default,
 * its help, and who may set it. Commander's options (commander-options.ts), the config loader
 * (config.ts through read-setting.ts), a batch task's keys (batch/task-file.ts), what a `.env` may set
 * (cli/dotenv/dotenv-keys.ts) and `.env.example` (env-example.ts) are all derived from the table
 * (settings.ts), so none of them spells a default, a variable or a help text of its own.
 */

export interface Setting<T = unknown> {
  /**
   * commander's spelling: "--timeout <seconds>", "-w, --workspace <dir>", "--allow-private",
   * "--no-blocklist". Its attribute name (timeout, workspace, allowPrivate, blocklist) is the
   * setting's key in the table, in `CliFlags` and in a batch task. Undefined: an environment
   * variable only (the API key).
   */
  flag?: string;
  /** The environment variable (and `.env` key) that gives it when the flag is not. */
  env?: string;
  /** What it is, for --help and `.env.example`; the default and the variable are added from the fields below. */
  help: string;
  /** The value the config loader uses when neither flag nor variable gives one. */
  default?: T;
  /**
   * The default as people read it ("120", "2g", "the current directory"); for a default the
   * Docker backend applies (`SANDBOX_DEFAULTS`), computed from it. Without it, `default` as text.
   */
  defaultText?: string;
  /**
   * Reads the flag's or the variable's text; throws ConfigError naming `name` (the flag) when it is
   * wrong. Without it the text is the value.
   */
  parse?: (text: string, name: string) => T;
  /** Repeatable: each flag value appended to the ones before; the variable holds them split by `envSeparator`. */
  repeatable?: true;
  /** How the variable of a repeatable setting separates its items (default: commas). */
  envSeparator?: RegExp;
  /** The only values commander accepts (a usage error names them). */
  choices?: readonly string[];
  /**
   * An optional value (`flag: "--devcontainer [path]"`) given only attached, `--devcontainer=PATH`,
   * as GNU getopt takes optional values: a bare flag never takes the next word, which is the task's
   * or the command's (commander would take it; `attachOptionalValues` keeps it from doing so).
   */
  attachedValue?: true;
  /** `--no-FLAG` as well (`--no-protect`, `--no-apply`), with this help. */
  negation?: string;
  /** A batch task may set it (TASKS.jsonl; docs/batch.md). */
  perTask?: true;
  /**
   * It gives the sandbox more than it had (a network, hosts to reach): never from a `.env` nor a
   * tasks file (a sandbox or a task's output may have written either), only from flags or the real
   * environment. `unless`: the one value that widens nothing (`--network none`).
   */
  widens?: { unless?: string };
  /** A `.env` of doubtful origin may still set it (MODEL_ID picks among models the key may use anyway). */
  freeInDotenv?: true;
  /** `.env.example` writes it uncommented, as something `harness run` needs. */
  required?: true;
  /** `.env.example`'s sample value (default: the default's text, where it is a value). */
  example?: string;
}

/** The long flag without its argument: "--timeout", "--allow-host"; the variable for an env-only setting. */
export function flagName(setting: Setting): string {
  const long = setting.flag?.split(/[ ,]+/).find((part) => part.startsWith("--"));
  return long ?? setting.env ?? "?";
}

/** The default as help shows it, if there is one. */
export function defaultText(setting: Setting): string | undefined {
  if (setting.defaultText !== undefined) return setting.defaultText;
  return setting.default === undefined ? undefined : String(setting.default);
}

/**
 * The help line: the setting's text, then its default and (`withEnv`) its variable, e.g.
 * "per-command timeout in seconds (default 120; env HARNESS_TIMEOUT)".
 */
export function helpLine(setting: Setting, text = setting.help, withEnv = true): string {
  const shown = defaultText(setting);
  const notes = [
    ...(shown === undefined ? [] : [`default ${shown}`]),
    ...(setting.env === undefined || !withEnv ? [] : [`env ${setting.env}`]),
  ];
  return notes.length === 0 ? text : `${text} (${notes.join("; ")})`;
}

/** Bytes as a size flag takes them, in the largest unit that divides them: 2g, 512m, 64k. */
export function sizeText(bytes: number): string {
  for (const [unit, scale] of [
    ["t", 1024 ** 4],
    ["g", 1024 ** 3],
    ["m", 1024 ** 2],
    ["k", 1024],
  ] as const) {
    if (bytes % scale === 0) return `${bytes / scale}${unit}`;
  }
  return String(bytes);
}
