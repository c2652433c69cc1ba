/**
 * What a `.env` may set. harness loads `./.env`, and the current directory is often a workspace the
 * sandbox can write, so keys are sorted by what a planted value could do:
 * - widening keys give the sandbox more than it had (a network, hosts to reach): never from a `.env`,
 *   only from flags or the real environment, like `--allow-private`;
 * - free keys are harmless whoever wrote them (MODEL_ID picks among models the key may use);
 * - every other key is guarded: the workspace, the state directory (XDG_STATE_HOME, HOME), the
 *   image, the runtime, the engine (DOCKER_*), the API endpoint and key, limits, prices, and
 *   anything else (PATH, NODE_*, proxies). A `.env` a sandbox may have written sets none of them.
 * Which setting is which is the table's to say (src/settings/: `widens`, `freeInDotenv`).
 */
import {
  FREE_DOTENV_KEYS,
  wideningFlag as settingWideningFlag,
  WIDENING_ENV_KEYS,
} from "../../settings/settings.js";

/** Loaded even from a `.env` a sandbox wrote: the table's `freeInDotenv` settings. */
export const FREE_KEYS: ReadonlySet<string> = FREE_DOTENV_KEYS;

/**
 * The flag a widening setting stands for, or undefined when `key=value` widens nothing. An empty
 * value and `HARNESS_NETWORK=none` (the default) narrow nothing either, so they are simply allowed.
 */
export function wideningFlag(key: string, value: string): string | undefined {
  return settingWideningFlag("dotenv", key, value);
}

/** True for a key a `.env` of doubtful origin must not set. */
export function isGuardedKey(key: string): boolean {
  return !FREE_KEYS.has(key) && !WIDENING_ENV_KEYS.has(key);
}
