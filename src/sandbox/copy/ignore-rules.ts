/**
 * Which workspace paths copy mode leaves out: harness's own state plus the patterns in the host's
 * `.harnessignore`. Left-out paths are neither copied in, nor compared, nor applied back.
 * The pattern language is a small gitignore subset: `*`, `?`, `**`, a leading `/` anchors to the
 * workspace root, a trailing `/` matches directories only, a pattern without `/` matches a name at
 * any depth. Negation (`!`) is refused rather than half-supported.
 */
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../../errors.js";

/** True when a workspace-relative path ("a/b.txt") is left out; ancestors count too. */
export type IgnoreMatcher = (path: string, isDirectory: boolean) => boolean;

export const IGNORE_FILE = ".harnessignore";

/** Kept minimal on purpose: `.git` is copied (agents need it); only harness's own state stays out. */
export const DEFAULT_IGNORES: readonly string[] = ["/.harness/"];

/** Bigger than any sensible ignore file; a bigger one is a mistake, not rules. */
const MAX_IGNORE_FILE_BYTES = 64 * 1024;

interface Rule {
  regex: RegExp;
  directoryOnly: boolean;
  /** Matched against the whole path (true) or the last component (false). */
  anchored: boolean;
}

function globToRegex(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] ?? "";
    if (c === "*" && glob[i + 1] === "*") {
      const slashAfter = glob[i + 2] === "/";
      out += slashAfter ? "(?:.*/)?" : ".*";
      i += slashAfter ? 2 : 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

function parseRule(line: string, source: string): Rule | undefined {
  const text = line.replace(/\s+$/, "");
  if (text === "" || text.startsWith("#")) return undefined;
  if (text.startsWith("!")) {
    throw new ConfigError(`${source}: negated patterns ('${text}') are not supported`);
  }
  const directoryOnly = text.endsWith("/");
  const body = text.replace(/\/+$/, "");
  const anchored = body.includes("/");
  return { regex: globToRegex(body.replace(/^\//, "")), directoryOnly, anchored };
}

export function createIgnoreMatcher(patterns: readonly string[], source = IGNORE_FILE): IgnoreMatcher {
  const rules = patterns.map((p) => parseRule(p, source)).filter((r): r is Rule => r !== undefined);
  const matchesOne = (path: string, isDirectory: boolean): boolean => {
    const name = path.slice(path.lastIndexOf("/") + 1);
    return rules.some((r) => (isDirectory || !r.directoryOnly) && r.regex.test(r.anchored ? path : name));
  };
  return (path, isDirectory) => {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      if (matchesOne(parts.slice(0, i).join("/"), true)) return true;
    }
    return matchesOne(path, isDirectory);
  };
}

/** The defaults plus the workspace's `.harnessignore`, read without following a symlink. */
export async function loadIgnoreMatcher(root: string): Promise<IgnoreMatcher> {
  let text = "";
  try {
    // O_NONBLOCK: a fifo planted there would otherwise block open(2) until a writer came, forever.
    const handle = await open(
      join(root, IGNORE_FILE),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
    try {
      const info = await handle.stat();
      if (info.isFile() && info.size <= MAX_IGNORE_FILE_BYTES) text = await handle.readFile("utf8");
      else if (info.isFile()) throw new ConfigError(`${IGNORE_FILE} is larger than 64 KiB`);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // Absent (or a symlink, which is never followed): only the defaults apply.
  }
  return createIgnoreMatcher([...DEFAULT_IGNORES, ...text.split(/\r?\n/)]);
}
