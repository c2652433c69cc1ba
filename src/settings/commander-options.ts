/**
 * Commander's options, made from the table: the flag, the help with the default and the variable
 * the table gives, the choices, repeatable and `--no-` forms. No default is given to commander
 * itself: an unset flag must stay unset so that the variable, then the table's default, applies.
 */
import { type Command, Option } from "commander";
import { ConfigError } from "../errors.js";
import { flagName, helpLine, type Setting } from "./setting.js";
import { SETTING_LIST, SETTINGS, type SettingKey } from "./settings.js";

/** For repeatable options: each value appended to the ones before. */
export function collect(value: string, previous: unknown): string[] {
  return [...(Array.isArray(previous) ? previous : []), value];
}

/** A setting's help for one command where it means something narrower ("per task: …", "workspace to check"). */
export type HelpOverrides = Partial<Record<SettingKey, string>>;

/** The options of these settings, in this order, with `help` replacing the table's text where given. */
export function settingOptions(keys: readonly SettingKey[], help: HelpOverrides = {}): Option[] {
  return keys.flatMap((key) => {
    const setting: Setting = SETTINGS[key];
    if (setting.flag === undefined) throw new Error(`setting '${key}' has no flag`);
    const option = new Option(setting.flag, helpLine(setting, help[key] ?? setting.help));
    if (setting.choices !== undefined) option.choices(setting.choices);
    if (setting.repeatable) option.argParser(collect);
    if (setting.attachedValue) {
      // attachOptionalValues turned a bare flag into `--flag=`: no value, the flag's default.
      option.argParser((value: string) => (value === "" ? true : value));
      option.flags = setting.flag.replace(" [", "[=");
    }
    if (setting.negation === undefined) return [option];
    const long = setting.flag.split(/[ ,]+/).find((part) => part.startsWith("--")) ?? "";
    return [option, new Option(`--no-${long.slice(2)}`, setting.negation)];
  });
}

/** Adds the options of these settings to `command`. */
export function addSettings(
  command: Command,
  keys: readonly SettingKey[],
  help: HelpOverrides = {},
): Command {
  for (const option of settingOptions(keys, help)) command.addOption(option);
  return command;
}

/** The long flags whose optional value must be attached (`attachedValue`). */
const ATTACHED = new Set(SETTING_LIST.filter((s) => s.attachedValue).map((s) => flagName(s)));

/**
 * argv with each bare flag of an `attachedValue` setting written `--flag=`, so that commander, which
 * gives an optional value the next word, leaves that word to the task or the command:
 * `harness run --devcontainer "fix the tests"` is a task with the default devcontainer.json. Words
 * after `--` are left alone. A bare flag followed by a path ending in `.json` (one word, no space)
 * is refused: the user meant it as the file (`--devcontainer=PATH`), and it would otherwise become
 * part of the task.
 */
export function attachOptionalValues(argv: readonly string[]): string[] {
  const end = argv.indexOf("--");
  return argv.map((arg, index) => {
    if ((end !== -1 && index > end) || !ATTACHED.has(arg)) return arg;
    const next = argv[index + 1];
    // A path, not a task that mentions one ("update package.json" has a space).
    if (next !== undefined && /^\S+\.json$/.test(next)) {
      throw new ConfigError(
        `${arg} takes its file attached: ${arg}=${next} (a word after a bare ${arg} is the task's or the command's)`,
      );
    }
    return `${arg}=`;
  });
}
