/** What one `--allow` preset gives a sandbox. */

export interface PresetGrant {
  /** Allow entries (`host:port`, or for git the host as given), each checked by config.ts. */
  hosts: string[];
  /**
   * `KEY=value` variables for each command that point the sandbox's tool at the registries allowed,
   * as the host's configuration names them, credentials left out (`clientEnvKey` names them all).
   */
  env: string[];
}

/**
 * The variables a preset may set in the sandbox, and nothing else: a replay takes them from a
 * transcript file, which must not set LD_PRELOAD or NODE_OPTIONS through this path.
 */
const CLIENT_ENV_KEY =
  /^(?:npm_config_registry|npm_config_@[\w.-]+:registry|COREPACK_NPM_REGISTRY|YARN_NPM_REGISTRY_SERVER|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|PIP_TRUSTED_HOST|GOPROXY|GOSUMDB|GONOSUMDB|GONOPROXY|GOPRIVATE|HARNESS_CARGO_CONFIG|CARGO_REGISTRIES_[A-Z0-9_]+_INDEX|HARNESS_MAVEN_SETTINGS)$/;

/** Whether `entry` (`KEY=value`) is a variable a preset may set. */
export function isClientEnv(entry: string): boolean {
  const key = entry.slice(0, entry.indexOf("="));
  return entry.includes("=") && CLIENT_ENV_KEY.test(key);
}
