/**
 * What a `.env` may set. harness loads `./.env`, and the current directory is often a workspace the
 * sandbox can write, so keys are sorted by what a planted value could do:
 * - widening keys give the sandbox more than it had (a network, hosts to reach): never from a `.env`,
 *   only from flags or the real environment, like `--allow-private`;
 * - free keys are harmless whoever wrote them (MODEL_ID picks among models the key may use);
 * - every other key is guarded: the workspace, the state directory (XDG_STATE_HOME, HOME), the
 *   image, the runtime, the engine (DOCKER_*), the API endpoint and key, limits, prices, and
 *   anything else (PATH, NODE_*, proxies). A `.env` a sandbox may have written sets none of them.
 */

/** Loaded even from a `.env` a sandbox wrote. */
export const FREE_KEYS: ReadonlySet<string> = new Set(["MODEL_ID"]);

/** Flags that stand for the widening keys, for the notice. */
const WIDENING_FLAGS: Readonly<Record<string, string>> = {
  HARNESS_NETWORK: "--network",
  HARNESS_ALLOW_HOSTS: "--allow-host",
  HARNESS_ALLOW: "--allow",
  HARNESS_SECRETS: "--secret",
};

/**
 * The flag a widening setting stands for, or undefined when `key=value` widens nothing. An empty
 * value and `HARNESS_NETWORK=none` (the default) narrow nothing either, so they are simply allowed.
 */
export function wideningFlag(key: string, value: string): string | undefined {
  const flag = WIDENING_FLAGS[key];
  if (flag === undefined || value.trim() === "") return undefined;
  if (key === "HARNESS_NETWORK" && value.trim() === "none") return undefined;
  return flag;
}

/** True for a key a `.env` of doubtful origin must not set. */
export function isGuardedKey(key: string): boolean {
  return !FREE_KEYS.has(key) && !Object.hasOwn(WIDENING_FLAGS, key);
}
