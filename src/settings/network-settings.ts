/**
 * What the sandbox may reach: its network, and allowlist mode's entries, secrets and limits. Most
 * of these widen the sandbox, so a `.env` or a tasks file never sets them (`widens`); the entries
 * themselves are checked by the config loader, which knows the hosts' syntax and the presets.
 */
import { ConfigError } from "../errors.js";
import { SANDBOX_DEFAULTS } from "../sandbox/sandbox-request.js";
import { byteSize, positiveNumber } from "./parsers.js";
import { type Setting, sizeText } from "./setting.js";

export const NETWORK_SETTINGS = {
  network: {
    flag: "--network <mode>",
    env: "HARNESS_NETWORK",
    help: "sandbox network: none, bridge or a network name",
    default: SANDBOX_DEFAULTS.network,
    // Trimmed and never empty: Docker reads an empty (or unknown-looking) network mode as its default bridge.
    parse: (text: string, name: string): string => {
      const mode = text.trim();
      if (mode === "") throw new ConfigError(`${name} must be none, bridge or a network name, got '${text}'`);
      return mode;
    },
    perTask: true,
    widens: { unless: SANDBOX_DEFAULTS.network },
  },
  allowHost: {
    flag: "--allow-host <pattern>",
    env: "HARNESS_ALLOW_HOSTS",
    help: "allowlist mode: let the sandbox reach this host through harness's gateway (repeatable; example.com, *.example.org, host:8443; default ports 443 and 80)",
    repeatable: true,
    widens: {},
  },
  allow: {
    flag: "--allow <preset>",
    env: "HARNESS_ALLOW",
    help: "allowlist mode: allow a tool's registry as the host's own config names it, and point the sandbox's tool at it (repeatable): npm, pypi (or pip), go, cargo, maven, git=HOST",
    repeatable: true,
    widens: {},
  },
  /** Flag only: this opens the host's own loopback services to the sandbox. */
  allowPrivate: {
    flag: "--allow-private",
    help: "allowlist mode: allowed names may resolve to private, loopback or link-local addresses (internal registries)",
    widens: {},
  },
  secret: {
    flag: "--secret <NAME@HOST>",
    env: "HARNESS_SECRETS",
    help: "allowlist mode: the sandbox gets a placeholder in NAME; the gateway puts $NAME's real value (read here) into requests to HOST only (repeatable; allows HOST)",
    repeatable: true,
    envSeparator: /\s+/,
    widens: {},
  },
  allowRequest: {
    flag: "--allow-request <METHODS@HOST/PATH>",
    help: "allowlist mode: limit an allowed host to these methods under this path prefix (repeatable; e.g. GET,HEAD@api.example.org/v1/)",
    repeatable: true,
  },
  secretInBody: {
    flag: "--secret-in-body <NAME>",
    help: "also put NAME's value into request bodies to its host (not only headers, URL and query)",
    repeatable: true,
  },
  egressLimit: {
    flag: "--egress-limit <size>",
    env: "HARNESS_EGRESS_LIMIT",
    help: "allowlist mode: most bytes through the gateway per run",
    defaultText: sizeText(SANDBOX_DEFAULTS.egressLimitBytes),
    parse: byteSize,
  },
  /** Flag only, like `--allow-private`: a `.env` the sandbox can write must not widen a channel out of it. */
  egressWildcardNames: {
    flag: "--egress-wildcard-names <n>",
    help: "allowlist mode: most distinct names looked up under each *.suffix entry per run",
    defaultText: String(SANDBOX_DEFAULTS.egressWildcardNames),
    parse: (text: string, name: string) => positiveNumber(name, text),
  },
} as const satisfies Record<string, Setting>;
