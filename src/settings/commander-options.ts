/**
 * Commander's options, made from the table: the flag, the help with the default and the variable
 * the table gives, the choices, repeatable and `--no-` forms. No default is given to commander
 * itself: an unset flag must stay unset so that the variable, then the table's default, applies.
 */
import { type Command, Option } from "commander";
import { helpLine, type Setting } from "./setting.js";
import { SETTINGS, type SettingKey } from "./settings.js";

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
