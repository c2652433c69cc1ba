/**
 * How a preset asks a host tool about its configuration. The tools run on the host, so what the
 * sandbox can write must not steer them: they run from `/` (not the workspace, whose `.npmrc` or
 * `pip/` package the sandbox may have planted), python in isolated mode (`-I`: no current directory
 * or PYTHON* variables on its path), go with `GOTOOLCHAIN=local` (no toolchain downloaded and run),
 * and with only the variables the tools read for their configuration (a `.env` in the workspace could
 * otherwise set NODE_OPTIONS or LD_PRELOAD and run code on the host).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { ConfigError } from "../errors.js";

/** Runs a host tool: its stdout, or a thrown error like `execFileSync`'s. Replaceable in tests. */
export type ToolRunner = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => string;

/** Longest a tool may take to answer; npm starts in well under a second. */
const TOOL_TIMEOUT_MS = 15_000;

/** Variables npm, pip and go read for their configuration, and what they need to run at all. */
const TOOL_ENV =
  /^(?:PATH|HOME|USER|LOGNAME|LANG|LC_\w+|TMPDIR|XDG_CONFIG_(?:HOME|DIRS)|VIRTUAL_ENV|PIP_\w+|GOENV|GOPROXY|GOSUMDB|GONOSUMDB|GONOPROXY|GOPRIVATE)$/;
const NPM_ENV = /^npm_config_\w+$/i;

export function toolEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(
      Object.entries(env).filter(
        ([key, value]) => value !== undefined && (TOOL_ENV.test(key) || NPM_ENV.test(key)),
      ),
    ),
    // `go env` with a newer GOTOOLCHAIN would download that toolchain (from a GOPROXY a .env may
    // name) and run it here.
    GOTOOLCHAIN: "local",
  };
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

/** Whether `error` (from a ToolRunner) says the tool is not installed. */
export function toolMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === "ENOENT";
}

/** A tool's stdout, or a ConfigError that says what went wrong and which flag to use instead. */
export function ask(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  run: ToolRunner,
  flag: string,
): string {
  try {
    return run(file, args, env);
  } catch (error) {
    throw toolError(file, args, error, flag);
  }
}

/** The ConfigError for a tool that failed to answer (`error` from a ToolRunner). */
export function toolError(file: string, args: readonly string[], error: unknown, flag: string): ConfigError {
  const shown = `${file} ${args.join(" ")}`;
  const { code, stderr } = error as NodeJS.ErrnoException & { stderr?: unknown };
  const why =
    code === "ENOENT"
      ? `${file} is not installed (not found on PATH)`
      : code === "ETIMEDOUT"
        ? `\`${shown}\` did not answer in time`
        : `\`${shown}\` failed: ${firstLine(stderr) || (error as Error).message}`;
  return new ConfigError(
    `${flag} reads the host's configuration, but ${why}; give the host with --allow-host`,
  );
}

function firstLine(text: unknown): string {
  return (
    String(text ?? "")
      .trim()
      .split("\n")[0]
      ?.slice(0, 200) ?? ""
  );
}

/** Most a configuration file may hold: more is no configuration a person wrote. */
const MAX_CONFIG_BYTES = 1 << 20;

/**
 * A configuration file of the host user's own (cargo's, Maven's), or undefined when there is none.
 * These live in the user's home, which no sandbox mounts; a link there is the user's own.
 */
export function readHostConfig(path: string, flag: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw new ConfigError(`${flag}: cannot read ${path}: ${(error as Error).message}`);
  }
  if (text.length > MAX_CONFIG_BYTES) throw new ConfigError(`${flag}: ${path} is larger than 1 MiB`);
  return text;
}
