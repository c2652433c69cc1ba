/**
 * Workspace paths that a repository's own `.git/config` tells git to run or read: `core.hooksPath`
 * (husky's `.husky`, a `githooks/` folder) and `include.path` / `includeIf.*.path` (a shared config
 * kept in the work tree). The config itself is mounted read-only, but what it names in the work tree
 * would otherwise be writable: a hook planted there runs on the owner's next commit.
 */
import { posix } from "node:path";

export interface GitConfigPath {
  /** Workspace-relative, `/`-separated, normalized. */
  path: string;
  /** What names it, for messages: "core.hooksPath" or "include.path". */
  key: string;
  /** What git expects there. */
  type: "directory" | "file";
}

/** The value of one `key = value` line: quotes removed, a trailing comment dropped. */
function configValue(raw: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (c === '"') quoted = !quoted;
    else if (c === "\\" && i + 1 < raw.length) out += raw[++i];
    else if (!quoted && (c === "#" || c === ";")) break;
    else out += c;
  }
  return out.trim();
}

/**
 * Paths inside the workspace named by `configText`, the text of a config at `at.configDir` (default
 * `.git`, workspace-relative) of a repository whose work tree is `at.workTree` (default the root).
 * Relative hook paths are taken from the work tree, relative includes from the config's directory,
 * as git does; absolute ones count when they lie inside `workspace` (the host path). `~` paths and
 * anything outside are left out.
 */
export function gitConfigWorkspacePaths(
  configText: string,
  workspace: string,
  at: { configDir?: string; workTree?: string } = {},
): GitConfigPath[] {
  const configDir = at.configDir ?? ".git";
  const workTree = at.workTree ?? "";
  const found: GitConfigPath[] = [];
  let section = "";
  // A line that ends in a backslash goes on with the next one; a key may follow its section's
  // header on the same line (`[include] path = x`).
  for (let line of configText.replace(/\\\r?\n/g, "").split(/\r?\n/)) {
    const header = /^\s*\[([^\]"\s]+)(?:\s+"[^"]*")?\s*\]/.exec(line);
    if (header) {
      section = (header[1] ?? "").toLowerCase();
      line = line.slice(header[0].length);
    }
    const entry = /^\s*([A-Za-z][\w-]*)\s*=\s*(.*)$/.exec(line);
    if (!entry) continue;
    const key = `${section}.${(entry[1] ?? "").toLowerCase()}`;
    const value = configValue(entry[2] ?? "");
    if (value === "" || value.startsWith("~")) continue;
    let base: string;
    let named: GitConfigPath["key"];
    let type: GitConfigPath["type"];
    if (key === "core.hookspath") [base, named, type] = [workTree, "core.hooksPath", "directory"];
    else if (key === "include.path" || key === "includeif.path")
      [base, named, type] = [configDir, "include.path", "file"];
    else continue;
    const relative = value.startsWith("/")
      ? posix.relative(workspace, posix.normalize(value))
      : posix.normalize(posix.join(base, value));
    if (relative === "" || relative === "." || relative === ".." || relative.startsWith("../")) continue;
    if (posix.isAbsolute(relative)) continue;
    found.push({ path: relative.replace(/\/+$/, ""), key: named, type });
  }
  return found;
}
