/** `--allow npm`: the registry the host's npm uses, and its scoped registries. */
import { ConfigError } from "../errors.js";
import { ask, type ToolRunner } from "./host-tool.js";
import type { PresetGrant } from "./preset-grant.js";
import { isHttpUrl, unique, urlEntry, withoutCredentials } from "./preset-url.js";

const FLAG = "--allow npm";

/**
 * The sandbox's npm, corepack (which fetches pnpm and yarn) and yarn 2+ (whose own default is
 * another name) are pointed at the same registry, so they work with no flag.
 */
export function npmGrant(env: NodeJS.ProcessEnv, run: ToolRunner): PresetGrant {
  const registry = ask("npm", ["config", "get", "registry"], env, run, FLAG).trim();
  if (!isHttpUrl(registry)) {
    throw new ConfigError(
      `${FLAG}: npm's registry is '${registry}', not an http(s) URL; give the host with --allow-host`,
    );
  }
  const scoped = scopedRegistries(env, run);
  const hosts = unique([registry, ...scoped.map(([, url]) => url)].map((url) => urlEntry(url, FLAG)));
  const url = withoutCredentials(registry);
  return {
    hosts,
    env: [
      `npm_config_registry=${url}`,
      `COREPACK_NPM_REGISTRY=${url.replace(/\/+$/, "")}`,
      `YARN_NPM_REGISTRY_SERVER=${url.replace(/\/+$/, "")}`,
      ...scoped.map(([scope, scopeUrl]) => `npm_config_${scope}:registry=${withoutCredentials(scopeUrl)}`),
    ],
  };
}

/** `@scope:registry` settings: packages of a scope come from their own registry. */
function scopedRegistries(env: NodeJS.ProcessEnv, run: ToolRunner): [string, string][] {
  let config: unknown;
  try {
    config = JSON.parse(run("npm", ["config", "list", "--json"], env));
  } catch {
    // The main registry is known; scoped ones are a bonus, not a reason to fail.
    return [];
  }
  if (typeof config !== "object" || config === null) return [];
  return Object.entries(config).flatMap(([key, value]): [string, string][] => {
    const scope = /^(@[\w.-]+):registry$/.exec(key)?.[1];
    return scope !== undefined && typeof value === "string" && isHttpUrl(value) ? [[scope, value]] : [];
  });
}
