/**
 * A tripwire for obviously destructive commands. It is NOT the security boundary: the container is
 * (no privileges, resource limits, only the workspace mounted). A shell has endless ways to say the
 * same thing (`eval`, base64, scripts written to disk), so this only catches the model doing something
 * plainly wrong by accident and tells it so.
 */
import { ConfigError } from "../errors.js";

/** The verdict on one command. */
export type BlockVerdict =
  | {
      blocked: true;
      /** Stable name of the rule that matched, e.g. "privilege-escalation" or "custom:0". */
      rule: string;
      /** Why, in words the model can act on. */
      reason: string;
    }
  | { blocked: false };

export interface Blocklist {
  check(command: string): BlockVerdict;
}

export interface BlocklistOptions {
  /** More regular expressions (sources, no flags) tested against the normalised command. */
  extraPatterns?: string[];
  /** Turn every rule off (the container still is the boundary). */
  disabled?: boolean;
}

/** One simple command: its name without a path, and its arguments. */
interface SimpleCommand {
  name: string;
  args: string[];
}

interface Rule {
  name: string;
  reason: string;
  test(text: string, commands: readonly SimpleCommand[]): boolean;
}

/**
 * Undoes the cheap ways to dodge a string match: quotes and backslashes (`s\udo`, `"rm"`, `r''m`),
 * `$IFS` for spaces, `$HOME` for `~`, line continuations; newlines become `;`, whitespace collapses.
 */
export function normalizeCommand(command: string): string {
  return command
    .replace(/\\\r?\n/g, "")
    .replace(/\$'/g, "'")
    .replace(/["'\\]/g, "")
    .replace(/\$\{?IFS\}?/g, " ")
    .replace(/\$\{?HOME\}?/g, "~")
    .replace(/\r?\n/g, " ; ")
    .replace(/\s+/g, " ")
    .trim();
}

const CRITICAL_DIRS =
  /^\/(?:bin|boot|dev|etc|home|lib|lib32|lib64|libx32|opt|proc|root|run|sbin|srv|sys|usr|var)$/;
/** Devices a command may write to: /dev/null, /dev/stdout, /dev/stderr, /dev/fd/N, and the /dev/shm tmpfs. */
const ALLOWED_DEVICES = /^(?:null|stdout|stderr|fd\/\d+|shm\/.*)$/;
/** Words that run the command after them: `nohup sudo x`, `env A=1 rm …`, `xargs rm`, `if sudo …`. */
const WRAPPERS = new Set(
  "env nohup exec command builtin nice ionice setsid stdbuf xargs timeout watch eval time then do else elif if while until { } !".split(
    " ",
  ),
);
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh"]);
const FIND_EXEC = new Set(["-exec", "-execdir", "-ok", "-okdir"]);

const isRecursive = (args: readonly string[]) =>
  args.some((arg) => arg === "--recursive" || /^-[a-zA-Z]*[rR]/.test(arg));

function isCriticalPath(path: string): boolean {
  const trimmed = path.replace(/(?:\/\*?|\/\.)+$/, "");
  return trimmed === "" || /^~[\w.-]*$/.test(trimmed) || CRITICAL_DIRS.test(trimmed);
}

const isForbiddenDevice = (path: string) => path.startsWith("/dev/") && !ALLOWED_DEVICES.test(path.slice(5));
const has = (commands: readonly SimpleCommand[], test: (c: SimpleCommand) => boolean) => commands.some(test);

const BUILTIN_RULES: readonly Rule[] = [
  {
    name: "privilege-escalation",
    reason: "sudo/su/doas are not available in the sandbox and not needed: install into user space instead",
    test: (_, cmds) => has(cmds, (c) => ["sudo", "su", "doas"].includes(c.name)),
  },
  {
    name: "power-off",
    reason: "shutting down or rebooting the machine is never part of a coding task",
    test: (_, cmds) =>
      has(
        cmds,
        (c) =>
          ["shutdown", "reboot", "halt", "poweroff"].includes(c.name) ||
          (["init", "telinit"].includes(c.name) && ["0", "6"].includes(c.args[0] ?? "")) ||
          (c.name === "systemctl" && c.args.some((a) => ["poweroff", "reboot", "halt", "kexec"].includes(a))),
      ),
  },
  {
    name: "recursive-delete-root",
    reason:
      "recursive delete of /, ~ or a system directory; delete specific paths inside the workspace instead",
    test: (_, cmds) =>
      has(
        cmds,
        (c) =>
          c.name === "rm" &&
          (c.args.includes("--no-preserve-root") || (isRecursive(c.args) && c.args.some(isCriticalPath))),
      ),
  },
  {
    name: "recursive-permission-change-root",
    reason: "recursive chmod/chown/chgrp of /, ~ or a system directory",
    test: (_, cmds) =>
      has(
        cmds,
        (c) =>
          ["chmod", "chown", "chgrp"].includes(c.name) && isRecursive(c.args) && c.args.some(isCriticalPath),
      ),
  },
  {
    name: "format-disk",
    reason: "creating or wiping filesystems (mkfs, mkswap, wipefs) destroys disks",
    test: (_, cmds) => has(cmds, (c) => /^(?:mkfs(?:\.\w+)?|mke2fs|mkswap|wipefs)$/.test(c.name)),
  },
  {
    name: "device-write",
    reason:
      "writing to a device under /dev/ (only /dev/null, /dev/stdout, /dev/stderr, /dev/fd/N are allowed)",
    test: (text, cmds) =>
      [...text.matchAll(/>\|?\s*(\/dev\/[^\s;|&)]+)/g)].some((m) => isForbiddenDevice(m[1] ?? "")) ||
      has(
        cmds,
        (c) =>
          (c.name === "dd" && c.args.some((a) => a.startsWith("of=") && isForbiddenDevice(a.slice(3)))) ||
          (c.name === "tee" && c.args.some(isForbiddenDevice)),
      ),
  },
  {
    name: "fork-bomb",
    reason: "a fork bomb exhausts the process table",
    test: (text) => /([^\s(){}|&;]+)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&/.test(text),
  },
];

/**
 * Splits a normalised command line into simple commands, looking through wrappers, `sh -c` and
 * `find -exec`.
 */
function simpleCommands(text: string): SimpleCommand[] {
  const withoutRedirects = text.replace(/\d*[<>]&\d*-?/g, " ").replace(/&>/g, ">");
  const commands: SimpleCommand[] = [];
  for (const segment of withoutRedirects.split(/&&|\|\||\$\(|[<>]\(|[;&|()`]/)) {
    collect(segment.split(" ").filter(Boolean), commands);
  }
  return commands;
}

function collect(tokens: readonly string[], into: SimpleCommand[]): void {
  let i = 0;
  while (i < tokens.length) {
    const token = tokens[i] ?? "";
    if (/^\w+=/.test(token) || WRAPPERS.has(token)) {
      i += 1;
      while (i < tokens.length && /^(?:-|\d[\w.]*$|\w+=)/.test(tokens[i] ?? "")) i += 1;
    } else if (SHELLS.has(basename(token)) && /^-\w*c/.test(tokens[i + 1] ?? "")) {
      i += 2;
    } else {
      break;
    }
  }
  if (i >= tokens.length) return;
  const args = tokens.slice(i + 1);
  into.push({ name: basename(tokens[i] ?? ""), args });
  const exec = args.findIndex((arg) => FIND_EXEC.has(arg));
  if (exec >= 0) collect(args.slice(exec + 1), into);
}

function basename(token: string): string {
  return token.replace(/^.*\//, "");
}

export function createBlocklist(options: BlocklistOptions = {}): Blocklist {
  if (options.disabled) return { check: () => ({ blocked: false }) };
  const rules = [...BUILTIN_RULES, ...(options.extraPatterns ?? []).map(customRule)];
  return {
    check(command: string): BlockVerdict {
      const text = normalizeCommand(command);
      const commands = simpleCommands(text);
      const rule = rules.find((candidate) => candidate.test(text, commands));
      return rule === undefined
        ? { blocked: false }
        : { blocked: true, rule: rule.name, reason: rule.reason };
    },
  };
}

function customRule(source: string, index: number): Rule {
  let pattern: RegExp;
  try {
    pattern = new RegExp(source);
  } catch (error) {
    throw new ConfigError(`Invalid blocklist pattern ${JSON.stringify(source)}: ${(error as Error).message}`);
  }
  return {
    name: `custom:${index}`,
    reason: `matches the configured blocklist pattern /${source}/`,
    test: (text) => pattern.test(text),
  };
}
