/**
 * How the config loader reads a setting: the flag's text wins, else the variable's. An empty or
 * blank variable is unset (compose passes unset ones through as "", and a `.env` may hold `KEY=`):
 * it never becomes a value, such as an empty network mode Docker would read as its bridge network.
 */
import type { CliFlags } from "../config.js";
import { flagName, type Setting } from "./setting.js";
import { SETTINGS, type SettingKey } from "./settings.js";

type Parsed<K extends SettingKey> = (typeof SETTINGS)[K] extends {
  parse: (text: string, name: string) => infer T;
}
  ? Exclude<T, undefined>
  : string;

/** A setting's value: never undefined where the table gives a default. */
export type SettingValue<K extends SettingKey> = (typeof SETTINGS)[K] extends { default: unknown }
  ? Parsed<K>
  : Parsed<K> | undefined;

export interface SettingsReader {
  /** The flag's text, else the variable's (undefined when blank). */
  text(key: SettingKey): string | undefined;
  /** Parsed; the table's default when neither flag nor variable gives one. */
  value<K extends SettingKey>(key: K): SettingValue<K>;
  /** A repeatable setting's items: the flag's, else the variable's split and trimmed. */
  list(key: SettingKey): { items: string[]; fromEnv: boolean };
}

/** Reads settings from these flags, then this environment. */
export function readSettings(flags: CliFlags, env: NodeJS.ProcessEnv): SettingsReader {
  const given = flags as Readonly<Record<string, unknown>>;
  const text = (key: SettingKey): string | undefined => {
    const flag = given[key];
    if (typeof flag === "string") return flag;
    const name = (SETTINGS[key] as Setting).env;
    const value = name === undefined ? undefined : env[name];
    return value === undefined || value.trim() === "" ? undefined : value;
  };
  return {
    text,
    value<K extends SettingKey>(key: K): SettingValue<K> {
      const setting = SETTINGS[key] as Setting;
      const raw = text(key);
      const value =
        raw === undefined || setting.parse === undefined ? raw : setting.parse(raw, flagName(setting));
      return (value ?? setting.default) as SettingValue<K>;
    },
    list(key: SettingKey) {
      const flag = given[key];
      if (Array.isArray(flag)) return { items: flag.map(String), fromEnv: false };
      const setting = SETTINGS[key] as Setting;
      const items = (text(key) ?? "")
        .split(setting.envSeparator ?? ",")
        .map((item) => item.trim())
        .filter((item) => item !== "");
      return { items, fromEnv: true };
    },
  };
}
