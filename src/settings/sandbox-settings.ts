/** The sandbox's own settings: which project, which image, who runs, how much it may use. */
import { ConfigError } from "../errors.js";
import { SANDBOX_DEFAULTS } from "../sandbox/sandbox-request.js";
import { parseSandboxUser } from "../sandbox/sandbox-user.js";
import { byteSize, mebibytes, positiveNumber, timeoutMs } from "./parsers.js";
import { type Setting, sizeText } from "./setting.js";

export const SANDBOX_SETTINGS = {
  workspace: {
    flag: "-w, --workspace <dir>",
    env: "HARNESS_WORKSPACE",
    help: "project directory to mount in the sandbox",
    defaultText: "the current directory",
    example: ".",
  },
  image: {
    flag: "--image <name>",
    env: "HARNESS_IMAGE",
    help: "use this existing image instead of building harness's sandbox image",
    perTask: true,
  },
  user: {
    flag: "--user <uid[:gid]>",
    help: "run sandbox commands as this user, never root",
    defaultText: "the workspace owner",
    parse: (text: string, name: string): string => {
      const user = parseSandboxUser(text);
      if (!user.ok) throw new ConfigError(`${name} ${user.reason}`);
      return user.user;
    },
  },
  runtime: {
    flag: "--runtime <name>",
    env: "HARNESS_RUNTIME",
    help: "OCI runtime for the sandbox, e.g. runsc (gVisor) where installed",
  },
  context: {
    flag: "--context <name>",
    help: "Docker context (engine) to use, as 'docker context ls' lists them",
    defaultText: "DOCKER_HOST, DOCKER_CONTEXT, the current context",
  },
  memory: {
    flag: "--memory <size>",
    env: "HARNESS_MEMORY",
    help: "sandbox memory limit",
    defaultText: sizeText(SANDBOX_DEFAULTS.memoryBytes),
    parse: byteSize,
    perTask: true,
  },
  tmpSize: {
    flag: "--tmp-size <size>",
    env: "HARNESS_TMP_SIZE",
    help: "size of the sandbox's /tmp (tmpfs, counts against memory)",
    defaultText: sizeText(SANDBOX_DEFAULTS.tmpSizeMiB * 1024 ** 2),
    parse: mebibytes,
  },
  homeSize: {
    flag: "--home-size <size>",
    env: "HARNESS_HOME_SIZE",
    help: "size of the sandbox's home directory (tmpfs)",
    defaultText: sizeText(SANDBOX_DEFAULTS.homeSizeMiB * 1024 ** 2),
    parse: mebibytes,
  },
  cpus: {
    flag: "--cpus <n>",
    env: "HARNESS_CPUS",
    help: "sandbox CPU limit in cores",
    defaultText: String(SANDBOX_DEFAULTS.cpus),
    parse: (text: string, name: string) => positiveNumber(name, text, false),
    perTask: true,
  },
  pids: {
    flag: "--pids <n>",
    env: "HARNESS_PIDS",
    help: "sandbox process limit",
    defaultText: String(SANDBOX_DEFAULTS.pidsLimit),
    parse: (text: string, name: string) => positiveNumber(name, text),
  },
  protect: {
    flag: "--protect <path>",
    help: "also mount this workspace path read-only (repeatable; always: .git/config, .git/hooks, .env, .envrc, .vscode, .devcontainer, .devcontainer.json)",
    repeatable: true,
    negation: "mount nothing read-only: the task may rewrite git hooks and config the host later runs",
  },
  timeout: {
    flag: "--timeout <seconds>",
    env: "HARNESS_TIMEOUT",
    help: "per-command timeout in seconds",
    default: SANDBOX_DEFAULTS.timeoutMs,
    defaultText: String(SANDBOX_DEFAULTS.timeoutMs / 1000),
    parse: timeoutMs,
    perTask: true,
  },
  publish: {
    flag: "--publish <port[:hostport]>",
    help: "make a server on this port of the sandbox's loopback reachable at the host's 127.0.0.1:HOSTPORT (default the same port) while harness runs (repeatable), without giving the sandbox a network interface",
    repeatable: true,
  },
  /** Flag only, like `--protect`: a `.env` the sandbox wrote must not switch what later tasks share. */
  packageCache: {
    flag: "--no-package-cache",
    help: "do not keep npm's and pip's caches for this workspace's later sandboxes (nor use what earlier ones kept)",
  },
  packageCacheMax: {
    flag: "--package-cache-max <size>",
    help: "most a user's package caches (one per workspace) keep together; the least recently used files go at a sandbox start",
    default: SANDBOX_DEFAULTS.packageCacheMaxBytes,
    defaultText: sizeText(SANDBOX_DEFAULTS.packageCacheMaxBytes),
    parse: byteSize,
  },
  devcontainer: {
    // Flag only: a `.env` or a task must not choose what image and user the sandbox gets.
    flag: "--devcontainer [path]",
    help: "take the image or Dockerfile build, containerEnv, remoteUser and postCreateCommand from this devcontainer.json (--devcontainer=PATH; a bare flag: the workspace's .devcontainer/devcontainer.json); fields that would weaken the sandbox are ignored",
    attachedValue: true,
  },
} as const satisfies Record<string, Setting>;
