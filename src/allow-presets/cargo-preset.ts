/**
 * `--allow cargo`: the crate index and downloads the host's cargo configuration names. cargo has no
 * stable command that prints its configuration, so its file is read (`$CARGO_HOME/config.toml`, as
 * cargo run from `/` reads it; never a workspace's `.cargo/`), with the variables cargo reads.
 */
import { join } from "node:path";
import { ConfigError } from "../errors.js";
import { readHostConfig } from "./host-tool.js";
import type { PresetGrant } from "./preset-grant.js";
import { isHttpUrl, unique, urlEntry, withoutCredentials } from "./preset-url.js";
import { keyOf, tomlStrings } from "./toml-strings.js";

const FLAG = "--allow cargo";

/**
 * crates.io as cargo knows it by itself (cargo's built-in source): the sparse index, or the git index
 * with `protocol = "git"`, and the host its crates download from (`dl` in the index's config.json).
 */
const CRATES_IO = {
  sparse: "https://index.crates.io/",
  git: "https://github.com/rust-lang/crates.io-index",
  downloads: "https://static.crates.io/crates",
};

/** The source that replaces crates.io in the sandbox's cargo (sandbox/toolchains/cargo-wrapper.sh). */
const MIRROR_SOURCE = "harness-mirror";

/**
 * crates.io's index and downloads, or the registry that replaces it (`[source.crates-io]
 * replace-with`, followed to a `registry` URL or a `[registries]` index); plus every registry of
 * `[registries]`, which a project's Cargo.toml may name. A replacement's downloads are assumed on
 * its index's host (its config.json is not read here): a registry that serves them elsewhere needs
 * that host with --allow-host too.
 */
export function cargoGrant(env: NodeJS.ProcessEnv): PresetGrant {
  const values = cargoConfig(env);
  const get = (...path: string[]) => values.get(keyOf(path));
  const registryEnv = (name: string, field: string) =>
    env[`CARGO_REGISTRIES_${name.toUpperCase().replaceAll("-", "_")}_${field}`]?.trim() || undefined;
  const index = (name: string) => registryEnv(name, "INDEX") ?? get("registries", name, "index");

  const hosts: string[] = [];
  const sandboxEnv: string[] = [];
  const replacement = replacementOf(get, index);
  if (replacement === undefined) {
    const protocol = registryEnv("crates-io", "PROTOCOL") ?? get("registries", "crates-io", "protocol");
    hosts.push(protocol === "git" ? CRATES_IO.git : CRATES_IO.sparse, CRATES_IO.downloads);
  } else {
    hosts.push(replacement.replace(/^(?:sparse|git|registry)\+/, ""));
    // One `--config` a line: cargo takes a dotted key and a value there, not a table.
    const settings = [
      `source.crates-io.replace-with = "${MIRROR_SOURCE}"`,
      `source.${MIRROR_SOURCE}.registry = ${tomlString(withoutCredentials(replacement))}`,
    ];
    sandboxEnv.push(`HARNESS_CARGO_CONFIG=${settings.join("\n")}`);
  }
  for (const name of registryNames(values, env)) {
    const url = index(name);
    if (url === undefined || name === "crates-io") continue;
    hosts.push(url.replace(/^(?:sparse|git|registry)\+/, ""));
    sandboxEnv.push(
      `CARGO_REGISTRIES_${name.toUpperCase().replaceAll("-", "_")}_INDEX=${withoutCredentials(url)}`,
    );
  }
  const remote = hosts.filter(isHttpUrl);
  if (remote.length === 0) {
    throw new ConfigError(
      `${FLAG}: cargo's configuration names no http(s) registry (${hosts.join(", ")}); give the host with --allow-host`,
    );
  }
  return { hosts: unique(remote.map((url) => urlEntry(url, FLAG))), env: sandboxEnv };
}

/** `$CARGO_HOME/config` (cargo prefers it) or `config.toml`; empty when there is neither. */
function cargoConfig(env: NodeJS.ProcessEnv): Map<string, string> {
  const home = env["CARGO_HOME"]?.trim() || (env["HOME"] ? join(env["HOME"], ".cargo") : undefined);
  if (home === undefined) return new Map();
  for (const name of ["config", "config.toml"]) {
    const path = join(home, name);
    const text = readHostConfig(path, FLAG);
    if (text === undefined) continue;
    try {
      return tomlStrings(text);
    } catch (error) {
      throw new ConfigError(`${FLAG}: cannot read ${path}: ${(error as Error).message}`);
    }
  }
  return new Map();
}

/** The URL that replaces crates.io, following `replace-with` through sources and registries. */
function replacementOf(
  get: (...path: string[]) => string | undefined,
  index: (name: string) => string | undefined,
): string | undefined {
  let name = get("source", "crates-io", "replace-with");
  for (let hops = 0; name !== undefined; hops++) {
    if (hops > 16) throw new ConfigError(`${FLAG}: cargo's source replacement goes round in a loop`);
    const url = get("source", name, "registry") ?? index(name);
    if (url !== undefined) return url;
    if (get("source", name, "local-registry") !== undefined || get("source", name, "directory") !== undefined)
      throw new ConfigError(
        `${FLAG}: cargo's crates.io is replaced by a local directory (source '${name}'), which needs no network and which the sandbox does not see`,
      );
    const next = get("source", name, "replace-with");
    if (next === undefined)
      throw new ConfigError(
        `${FLAG}: cargo's source '${name}' names no registry; give the host with --allow-host`,
      );
    name = next;
  }
  return undefined;
}

/** The registries `[registries.NAME]` or `CARGO_REGISTRIES_NAME_INDEX` name. */
function registryNames(values: Map<string, string>, env: NodeJS.ProcessEnv): string[] {
  const fromFile = [...values.keys()].flatMap((path) => {
    const [table, name, field] = path.split("\0");
    return table === "registries" && field === "index" && name !== undefined ? [name] : [];
  });
  const fromEnv = Object.keys(env).flatMap((key) => {
    const name = /^CARGO_REGISTRIES_([A-Z0-9_]+)_INDEX$/.exec(key)?.[1];
    return name === undefined ? [] : [name.toLowerCase()];
  });
  return unique([...fromFile, ...fromEnv]);
}

/** A TOML basic string. */
function tomlString(text: string): string {
  return JSON.stringify(text);
}
