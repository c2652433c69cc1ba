/** `--allow go`: the module proxies and checksum database the host's go uses. */
import { ConfigError } from "../errors.js";
import { type ToolRunner, toolError, toolMissing } from "./host-tool.js";
import type { PresetGrant } from "./preset-grant.js";
import { isHttpUrl, unique, urlEntry, withoutCredentials } from "./preset-url.js";

const FLAG = "--allow go";

/** What `go env` is asked, and what the sandbox's go is given (when set on the host). */
const GO_KEYS = ["GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GONOSUMDB"] as const;

/**
 * Go's own defaults (`go help environment`), used when the host has no go to ask: then harness's
 * environment may still set each variable, as it would for go.
 */
const GO_DEFAULTS: Readonly<Record<string, string>> = {
  GOPROXY: "https://proxy.golang.org,direct",
  GOSUMDB: "sum.golang.org",
};

/**
 * GOPROXY's proxies (`direct` and `off` need no entry: `direct` fetches from each module's own
 * repository, which `--allow git=HOST` or `--allow-host` allow) and GOSUMDB's server (its URL when
 * given, else `https://NAME`; the go command asks a proxy for the database first, through
 * `/sumdb/NAME/`, and the server itself only when the proxy does not serve it).
 */
export function goGrant(env: NodeJS.ProcessEnv, run: ToolRunner): PresetGrant {
  const values = goEnv(env, run);
  const proxy = values["GOPROXY"] ?? "";
  const proxies = proxy.split(/[,|]/).map((item) => item.trim());
  const remote = proxies.filter(isHttpUrl);
  if (remote.length === 0) {
    throw new ConfigError(
      `${FLAG}: go's GOPROXY is '${proxy}', which names no http(s) proxy; give the module hosts with --allow-host or --allow git=HOST`,
    );
  }
  const sumdb = sumdbUrl(values["GOSUMDB"] ?? "");
  const hosts = unique(
    [...remote, ...(sumdb === undefined ? [] : [sumdb])].map((url) => urlEntry(url, FLAG)),
  );
  const sandboxProxy = proxy.replace(/[^,|]+/g, (item) => withoutCredentials(item.trim()));
  return {
    hosts,
    env: GO_KEYS.flatMap((key) => {
      const value = key === "GOPROXY" ? sandboxProxy : values[key];
      return value === undefined || value === "" ? [] : [`${key}=${withoutCredentials(value)}`];
    }),
  };
}

/** `go env -json` of GO_KEYS; Go's defaults over harness's environment when go is not installed. */
function goEnv(env: NodeJS.ProcessEnv, run: ToolRunner): Partial<Record<string, string>> {
  const args = ["env", "-json", ...GO_KEYS];
  let text: string;
  try {
    text = run("go", args, env);
  } catch (error) {
    if (!toolMissing(error)) throw toolError("go", args, error, FLAG);
    return Object.fromEntries(
      GO_KEYS.map((key) => [key, env[key]?.trim() || GO_DEFAULTS[key]]).filter(([, v]) => v !== undefined),
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(`${FLAG}: \`go env -json\` did not answer JSON; give the hosts with --allow-host`);
  }
  const values: Partial<Record<string, string>> = {};
  for (const key of GO_KEYS) {
    const value = (parsed as Record<string, unknown> | null)?.[key];
    if (typeof value === "string") values[key] = value.trim();
  }
  return values;
}

/** GOSUMDB `off`, `NAME`, `NAME+KEY` or `NAME+KEY URL`: the server's URL, if any. */
function sumdbUrl(value: string): string | undefined {
  const [name, url] = value.split(/\s+/);
  if (url !== undefined && url !== "") return url;
  if (name === undefined || name === "" || name === "off") return undefined;
  return `https://${name.split("+")[0]}/`;
}
