/**
 * Where a checkpoint's ignore rules come from (git-ignore.ts matches them): the user's global
 * excludes file, read once on the host from the user's own git config (core.excludesFile, else
 * `$XDG_CONFIG_HOME/git/ignore`, followed if it is a link, as git does), and, during each walk, the workspace's `.git/info/exclude`, every
 * `.gitignore` and the root's `.harnessignore`. No git runs: the config is read as text for that one
 * key (an `[include]` is not followed). A file in the workspace is opened without following a link
 * (git does not follow a symlinked `.gitignore` either) nor waiting on a fifo, and one over
 * MAX_IGNORE_FILE_BYTES is not applied, with a note: ignoring less only checkpoints more.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { parseIgnoreFile, type RuleSet } from "./git-ignore.js";

/** Far above any real ignore file: a bigger one is not rules (and would slow every path's match). */
export const MAX_IGNORE_FILE_BYTES = 256 * 1024;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * The file's bytes; "absent" (missing, a link, not a regular file) or "too large". `followLink`: for
 * the user's own global excludes, outside the workspace (dotfile managers link them), as git does.
 */
export function readIgnoreFile(path: string | Buffer, followLink = false): Buffer | "absent" | "too large" {
  let fd: number;
  try {
    fd = openSync(path, followLink ? READ_FLAGS & ~constants.O_NOFOLLOW : READ_FLAGS);
  } catch {
    return "absent";
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return "absent";
    if (info.size > MAX_IGNORE_FILE_BYTES) return "too large";
    const buffer = Buffer.alloc(MAX_IGNORE_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > MAX_IGNORE_FILE_BYTES) return "too large";
    }
    return buffer.subarray(0, length);
  } catch {
    return "absent";
  } finally {
    closeSync(fd);
  }
}

/**
 * The user's global excludes as rules for the workspace's root, or undefined when there are none.
 * git reads `$XDG_CONFIG_HOME/git/config` then `~/.gitconfig` (the later wins), or only
 * `$GIT_CONFIG_GLOBAL`; without core.excludesFile the file is `$XDG_CONFIG_HOME/git/ignore`.
 */
export function globalExcludes(env: NodeJS.ProcessEnv = process.env): RuleSet | undefined {
  const home = env["HOME"] ?? homedir();
  const xdg = env["XDG_CONFIG_HOME"] || join(home, ".config");
  const configs =
    env["GIT_CONFIG_GLOBAL"] !== undefined
      ? [env["GIT_CONFIG_GLOBAL"]]
      : [join(xdg, "git", "config"), join(home, ".gitconfig")];
  let file: string | undefined;
  for (const config of configs) {
    let text: string;
    try {
      text = readFileSync(config, "utf8");
    } catch {
      continue;
    }
    file = excludesFileIn(text) ?? file;
  }
  if (file === "") return undefined;
  let path = file ?? join(xdg, "git", "ignore");
  if (path.startsWith("~/")) path = join(home, path.slice(2));
  if (!isAbsolute(path)) return undefined; // git takes it relative to where it runs: no fixed place.
  const content = readIgnoreFile(path, true);
  return typeof content === "string" ? undefined : parseIgnoreFile(content, "");
}

/** The last `core.excludesFile` value in a git config's text (sections and keys are case-insensitive). */
export function excludesFileIn(text: string): string | undefined {
  let section = "";
  let value: string | undefined;
  for (const raw of text.split("\n")) {
    let line = raw.trim();
    const header = /^\[\s*([A-Za-z0-9.-]+)\s*(?:"[^"]*")?\s*\]\s*(.*)$/.exec(line);
    if (header !== null) {
      // `[core "x"]` is a subsection, not core itself.
      section = /"/.test(line.slice(0, line.indexOf("]"))) ? "" : (header[1] ?? "").toLowerCase();
      line = header[2] ?? "";
    }
    if (section !== "core") continue;
    const pair = /^excludesfile\s*=\s*(.*)$/i.exec(line);
    if (pair === null) continue;
    value = unquote(pair[1] ?? "");
  }
  return value;
}

/** A config value: `"..."` quoting, `\"`/`\\` escapes, a comment (`#`, `;`) outside quotes ends it. */
function unquote(text: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"') quoted = !quoted;
    else if (c === "\\" && i + 1 < text.length) {
      const next = text[++i] as string;
      out += next === "t" ? "\t" : next === "n" ? "\n" : next;
    } else if (!quoted && (c === "#" || c === ";")) break;
    else out += c;
  }
  return quoted ? out : out.trimEnd();
}
