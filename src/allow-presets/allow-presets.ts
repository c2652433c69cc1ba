/**
 * `--allow npm`, `--allow pypi` (`pip`), `--allow git=HOST`: allow entries taken from the HOST's own
 * configuration of each tool, so a company mirror is allowed instead of the public registry. No
 * registry name is written here: npm and pip are asked.
 *
 * The tools run on the host, so what the sandbox can write must not steer them: they run from `/` (not
 * the workspace, whose `.npmrc` or `pip/` package the sandbox may have planted), python in isolated
 * mode (`-I`: no current directory or PYTHON* variables on its path), and with only the variables the
 * tools read for their configuration (a `.env` in the workspace could otherwise set NODE_OPTIONS or
 * LD_PRELOAD and run code on the host).
 */
import { execFileSync } from "node:child_process";
import { ConfigError } from "./errors.js";

/** A parsed `--allow` value. */
export type AllowPreset = { kind: "npm" } | { kind: "pypi" } | { kind: "git"; host: string };

/** Runs a host tool: its stdout, or a thrown error like `execFileSync`'s. Replaceable in tests. */
export type ToolRunner = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => string;

/** Longest a tool may take to answer; npm starts in well under a second. */
const TOOL_TIMEOUT_MS = 15_000;

export const PRESET_NAMES = "npm, pypi (or pip), git=HOST";

/** `npm`, `pypi`, `pip`, `git=HOST`; undefined for anything else. */
export function parseAllowPreset(text: string): AllowPreset | undefined {
  const value = text.trim();
  if (value === "npm") return { kind: "npm" };
  if (value === "pypi" || value === "pip") return { kind: "pypi" };
  const git = /^git=(.+)$/.exec(value);
  if (git?.[1] !== undefined) return { kind: "git", host: git[1].trim() };
  return undefined;
}

/**
 * The allow entries (`host:port`, or for git the host as given) a preset stands for. Throws
 * `ConfigError` when the tool is missing, fails or names no http(s) URL, saying which flag would help.
 */
export function allowPresetHosts(
  preset: AllowPreset,
  env: NodeJS.ProcessEnv,
  run: ToolRunner = hostToolRunner(),
): string[] {
  switch (preset.kind) {
    case "npm":
      return npmHosts(env, run);
    case "pypi":
      return pypiHosts(env, run);
    case "git":
      // A URL is accepted for convenience (`git=https://git.example.com:8443/`); a host is an entry.
      return [preset.host.includes("://") ? urlEntry(preset.host, "--allow git") : preset.host];
  }
}

function npmHosts(env: NodeJS.ProcessEnv, run: ToolRunner): string[] {
  const registry = ask("npm", ["config", "get", "registry"], env, run, "--allow npm").trim();
  if (!/^https?:\/\//i.test(registry)) {
    throw new ConfigError(
      `--allow npm: npm's registry is '${registry}', not an http(s) URL; give the host with --allow-host`,
    );
  }
  const urls = [registry, ...scopedRegistries(env, run)];
  return unique(urls.map((url) => urlEntry(url, "--allow npm")));
}

/** `@scope:registry` settings: packages of a scope come from their own registry. */
function scopedRegistries(env: NodeJS.ProcessEnv, run: ToolRunner): string[] {
  let config: unknown;
  try {
    config = JSON.parse(run("npm", ["config", "list", "--json"], env));
  } catch {
    // The main registry is known; scoped ones are a bonus, not a reason to fail.
    return [];
  }
  if (typeof config !== "object" || config === null) return [];
  return Object.entries(config)
    .filter(([key, value]) => /^@[^:]+:registry$/.test(key) && typeof value === "string")
    .map(([, value]) => value as string)
    .filter((url) => /^https?:\/\//i.test(url));
}

/**
 * pip's index (`index-url`: PIP_INDEX_URL, else pip's configuration, else pip's built-in default with
 * its file storage host) and its extra indexes (`extra-index-url`, same order). file:// URLs need no
 * network and are left out.
 */
function pypiHosts(env: NodeJS.ProcessEnv, run: ToolRunner): string[] {
  const envIndex = env["PIP_INDEX_URL"]?.trim() || undefined;
  const envExtras = env["PIP_EXTRA_INDEX_URL"]?.trim() || undefined;
  let config = new Map<string, string>();
  if (envIndex === undefined || envExtras === undefined) {
    try {
      config = pipConfig(env, run);
    } catch (error) {
      // With the index in the environment, pip's files only could add extra indexes.
      if (envIndex === undefined) throw error;
    }
  }
  // pip install reads its own section over [global]; the environment over both.
  const configured = (key: string) => config.get(`install.${key}`) ?? config.get(`global.${key}`);
  const index = envIndex ?? configured("index-url");
  const extras = envExtras ?? configured("extra-index-url") ?? "";
  const urls = [...(index === undefined ? pipDefault(env, run) : [index]), ...splitUrls(extras)];
  const remote = urls.filter((url) => /^https?:\/\//i.test(url));
  if (remote.length === 0) {
    throw new ConfigError(
      `--allow pypi: pip's configuration names no http(s) index (${urls.join(", ") || "none"}); give the host with --allow-host`,
    );
  }
  return unique(remote.map((url) => urlEntry(url, "--allow pypi")));
}

/** `python3 -m pip config list`: lines like `global.index-url='https://…'`. */
function pipConfig(env: NodeJS.ProcessEnv, run: ToolRunner): Map<string, string> {
  const text = ask("python3", ["-I", "-m", "pip", "config", "list"], env, run, "--allow pypi");
  const values = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^([\w.-]+)=(['"])(.*)\2\s*$/.exec(line.trim());
    // `:env:.` lines repeat PIP_* variables, which were read first.
    if (match?.[1] !== undefined && match[3] !== undefined) values.set(match[1], match[3]);
  }
  return values;
}

/** pip's own default index and the host its files are served from, read from pip itself. */
function pipDefault(env: NodeJS.ProcessEnv, run: ToolRunner): string[] {
  const program =
    "from pip._internal.models.index import PyPI; print(PyPI.simple_url); print('https://' + PyPI.file_storage_domain + '/')";
  return splitUrls(ask("python3", ["-I", "-c", program], env, run, "--allow pypi"));
}

/** Values of `extra-index-url` are separated by whitespace (a config file's value may span lines). */
function splitUrls(text: string): string[] {
  return text
    .replaceAll("\\n", "\n")
    .split(/\s+/)
    .filter((url) => url !== "");
}

/** `https://host[:port]/…` as the entry `host:port` (the scheme's port when none is given). */
export function urlEntry(text: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${flag}: '${text}' is not a URL; give the host with --allow-host`);
  }
  const port = url.port || { "https:": "443", "http:": "80" }[url.protocol];
  // A URL names one host: a "*" there must not become a wildcard entry.
  if (port === undefined || url.hostname === "" || url.hostname.includes("*")) {
    throw new ConfigError(`${flag}: '${text}' is not an http(s) URL; give the host with --allow-host`);
  }
  // URL keeps an IPv6 host in brackets, as an entry spells it.
  return `${url.hostname}:${port}`;
}

/** A tool's stdout, or a ConfigError that says what went wrong and which flag to use instead. */
function ask(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  run: ToolRunner,
  flag: string,
): string {
  const shown = `${file} ${args.join(" ")}`;
  try {
    return run(file, args, env);
  } catch (error) {
    const { code, stderr } = error as NodeJS.ErrnoException & { stderr?: unknown };
    const why =
      code === "ENOENT"
        ? `${file} is not installed (not found on PATH)`
        : code === "ETIMEDOUT"
          ? `\`${shown}\` did not answer in time`
          : `\`${shown}\` failed: ${firstLine(stderr) || (error as Error).message}`;
    throw new ConfigError(
      `${flag} reads the host's configuration, but ${why}; give the host with --allow-host`,
    );
  }
}

function firstLine(text: unknown): string {
  return (
    String(text ?? "")
      .trim()
      .split("\n")[0]
      ?.slice(0, 200) ?? ""
  );
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** Variables npm and pip read for their configuration, and what they need to run at all. */
const TOOL_ENV =
  /^(?:PATH|HOME|USER|LOGNAME|LANG|LC_\w+|TMPDIR|XDG_CONFIG_(?:HOME|DIRS)|VIRTUAL_ENV|PIP_\w+)$/;
const NPM_ENV = /^npm_config_\w+$/i;

export function toolEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([key, value]) => value !== undefined && (TOOL_ENV.test(key) || NPM_ENV.test(key)),
    ),
  );
}

/** execFile without a shell, from `/`, with a timeout and only the tools' own variables. */
export function hostToolRunner(timeoutMs: number = TOOL_TIMEOUT_MS): ToolRunner {
  return (file, args, env) =>
    execFileSync(file, args, {
      env: toolEnv(env),
      cwd: "/",
      timeout: timeoutMs,
      killSignal: "SIGKILL",
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
    });
}
