/**
 * The table of every setting, by the key commander gives its flag, and what is derived from it for
 * the places that must agree: the flags' type, a batch task's keys, what a `.env` may set.
 * To add a setting (README.md here): one entry in the group file it belongs to (its flag, env, help,
 * default, parse, perTask, widens), its key in the command's list in cli.ts, a `read.value(key)` in
 * config.ts; then `npm run gen:env-example` if it has a variable.
 */
import { AGENT_SETTINGS } from "./agent-settings.js";
import { ENGINE_SETTINGS } from "./engine-settings.js";
import { ISOLATION_SETTINGS } from "./isolation-settings.js";
import { NETWORK_SETTINGS } from "./network-settings.js";
import { SANDBOX_SETTINGS } from "./sandbox-settings.js";
import { flagName, type Setting } from "./setting.js";

/** Every setting, in the order help and `.env.example` list them. */
export const SETTINGS = {
  ...AGENT_SETTINGS,
  ...ENGINE_SETTINGS,
  ...SANDBOX_SETTINGS,
  ...NETWORK_SETTINGS,
  ...ISOLATION_SETTINGS,
} as const;

export type SettingKey = keyof typeof SETTINGS;

/** The settings a flag gives (not the API key and endpoint): commander's keys (a test checks it agrees). */
export type FlagSettingKey = {
  [K in SettingKey]: (typeof SETTINGS)[K] extends { flag: string } ? K : never;
}[SettingKey];

/** What commander gives for a flag: its text, its texts (repeatable, variadic), or a switch. */
type FlagValue<S> = S extends { repeatable: true }
  ? S extends { negation: string }
    ? string[] | false
    : string[]
  : S extends { flag: `${string}...>` }
    ? string[]
    : S extends { flag: `${string}<${string}` }
      ? string
      : S extends { flag: `${string}[${string}` }
        ? string | boolean
        : boolean;

/** Flags as commander parses them, every one optional: `CliFlags` (config.ts) is these. */
export type SettingFlags = { [K in FlagSettingKey]?: FlagValue<(typeof SETTINGS)[K]> };

/** Each setting with its key, in table order. */
export const SETTING_LIST: readonly (Setting & { key: SettingKey })[] = Object.entries(SETTINGS).map(
  ([key, setting]) => ({ ...(setting as Setting), key: key as SettingKey }),
);

/** The keys a batch task may set: the `perTask` settings. */
export const TASK_KEYS: readonly SettingKey[] = SETTING_LIST.filter((s) => s.perTask).map((s) => s.key);

/**
 * The flag to name when `value`, set by a tasks file (`where: "task"`, key) or a `.env`
 * (`where: "dotenv"`, variable), would widen the sandbox; undefined when it widens nothing. In a
 * `.env` an empty value is unset, so it widens nothing; in a task it is a value like any other.
 */
export function wideningFlag(where: "task" | "dotenv", name: string, value: unknown): string | undefined {
  const setting = SETTING_LIST.find((s) => (where === "task" ? s.key === name : s.env === name));
  if (setting?.widens === undefined) return undefined;
  const text = where === "dotenv" ? String(value).trim() : value;
  if (where === "dotenv" && text === "") return undefined;
  if (setting.widens.unless !== undefined && text === setting.widens.unless) return undefined;
  return flagName(setting);
}

/** Variables a `.env` of doubtful origin may still set. */
export const FREE_DOTENV_KEYS: ReadonlySet<string> = new Set(
  SETTING_LIST.flatMap((s) => (s.freeInDotenv && s.env !== undefined ? [s.env] : [])),
);

/** Variables no `.env` sets: they widen the sandbox. */
export const WIDENING_ENV_KEYS: ReadonlySet<string> = new Set(
  SETTING_LIST.flatMap((s) => (s.widens && s.env !== undefined ? [s.env] : [])),
);
