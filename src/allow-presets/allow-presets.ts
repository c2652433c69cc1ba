/**
 * `--allow npm`, `pypi` (`pip`), `go`, `cargo`, `maven`, `git=HOST`: allow entries taken from the
 * HOST's own configuration of each tool, so a company mirror is allowed instead of the public
 * registry, and the variables that point the sandbox's copy of the tool at the same registries, so
 * it works with no flag. Registry names are asked of the tools (npm, pip, go) or read from their
 * files (cargo, Maven); only where the host has no configuration does a tool's own default apply.
 * How the host's tools are run safely: host-tool.ts.
 */
import { cargoGrant } from "./cargo-preset.js";
import { goGrant } from "./go-preset.js";
import { hostToolRunner, type ToolRunner } from "./host-tool.js";
import { mavenGrant } from "./maven-preset.js";
import { npmGrant } from "./npm-preset.js";
import type { PresetGrant } from "./preset-grant.js";
import { urlEntry } from "./preset-url.js";
import { pypiGrant } from "./pypi-preset.js";

export { hostToolRunner, type ToolRunner, toolEnv } from "./host-tool.js";
export { isClientEnv, type PresetGrant } from "./preset-grant.js";
export { urlEntry } from "./preset-url.js";

/** A parsed `--allow` value. */
export type AllowPreset = { kind: "npm" | "pypi" | "go" | "cargo" | "maven" } | { kind: "git"; host: string };

export const PRESET_NAMES = "npm, pypi (or pip), go, cargo, maven, git=HOST";

/** `npm`, `pypi`, `pip`, `go`, `cargo`, `maven`, `git=HOST`; undefined for anything else. */
export function parseAllowPreset(text: string): AllowPreset | undefined {
  const value = text.trim();
  if (value === "npm" || value === "go" || value === "cargo" || value === "maven") return { kind: value };
  if (value === "pypi" || value === "pip") return { kind: "pypi" };
  const git = /^git=(.+)$/.exec(value);
  if (git?.[1] !== undefined) return { kind: "git", host: git[1].trim() };
  return undefined;
}

/** The flag as the user would write it, for messages. */
export function presetFlag(preset: AllowPreset): string {
  return preset.kind === "git" ? `--allow git=${preset.host}` : `--allow ${preset.kind}`;
}

/**
 * What a preset gives: its allow entries (`host:port`, or for git the host as given) and the
 * sandbox's variables. Throws `ConfigError` when the tool is missing, fails or names no http(s)
 * URL, saying which flag would help.
 */
export function allowPresetGrant(
  preset: AllowPreset,
  env: NodeJS.ProcessEnv,
  run: ToolRunner = hostToolRunner(),
): PresetGrant {
  switch (preset.kind) {
    case "npm":
      return npmGrant(env, run);
    case "pypi":
      return pypiGrant(env, run);
    case "go":
      return goGrant(env, run);
    case "cargo":
      return cargoGrant(env);
    case "maven":
      return mavenGrant(env);
    case "git":
      // A URL is accepted for convenience (`git=https://git.example.com:8443/`); a host is an entry.
      return {
        hosts: [preset.host.includes("://") ? urlEntry(preset.host, "--allow git") : preset.host],
        env: [],
      };
  }
}

/** The allow entries alone. */
export function allowPresetHosts(
  preset: AllowPreset,
  env: NodeJS.ProcessEnv,
  run: ToolRunner = hostToolRunner(),
): string[] {
  return allowPresetGrant(preset, env, run).hosts;
}
