/**
 * Comparing the host workspace with the sandbox's copy of it: which paths were added, modified or
 * deleted in the sandbox. Both sides are plain maps from workspace-relative path to what is there,
 * so this file knows nothing about tar, Docker or the file system.
 */

/** What one path holds, on either side. */
export interface TreeEntry {
  /** "file", "directory", "symlink", or (sandbox side only) "fifo", "character-device", ... */
  type: string;
  /** Permission bits (0o777). */
  mode: number;
  /** Content bytes (files only). */
  size: number;
  /** Hex SHA-256 of the content (files only). */
  sha256?: string | undefined;
  /** Target of a symlink. */
  linkname?: string | undefined;
  /** Sandbox side: this file was archived as a hard link to that earlier path (same content). */
  hardLinkTo?: string | undefined;
}

/** Workspace-relative path ("src/a.py") to entry. */
export type Tree = Map<string, TreeEntry>;

/** A: only in the sandbox; M: in both but different; D: only on the host. */
export type ChangeKind = "A" | "M" | "D";

export interface Change {
  kind: ChangeKind;
  path: string;
  /** For "M": what differs. */
  differs: ("type" | "content" | "mode" | "target")[];
  /** The host's entry (M, D). */
  before?: TreeEntry | undefined;
  /** The sandbox's entry (A, M). */
  after?: TreeEntry | undefined;
}

export interface ChangeCounts {
  added: number;
  modified: number;
  deleted: number;
}

function differences(before: TreeEntry, after: TreeEntry): Change["differs"] {
  if (before.type !== after.type) return ["type"];
  const out: Change["differs"] = [];
  if (before.type === "file" && before.sha256 !== after.sha256) out.push("content");
  if (before.type === "symlink" && before.linkname !== after.linkname) out.push("target");
  // Symlink modes mean nothing on Linux and differ between file systems.
  if (before.type !== "symlink" && before.mode !== after.mode) out.push("mode");
  return out;
}

/**
 * The changes that turn `host` into `sandbox`, sorted by path. Paths `leftOut` rejects (ignored,
 * or never copied in) are not compared on either side: their absence in the sandbox is no deletion.
 */
export function diffTrees(
  host: Tree,
  sandbox: Tree,
  leftOut: (path: string, isDirectory: boolean) => boolean = () => false,
): Change[] {
  const changes: Change[] = [];
  for (const [path, after] of sandbox) {
    if (leftOut(path, after.type === "directory")) continue;
    const before = host.get(path);
    if (!before) {
      changes.push({ kind: "A", path, differs: [], after });
      continue;
    }
    const differs = differences(before, after);
    if (differs.length > 0) changes.push({ kind: "M", path, differs, before, after });
  }
  for (const [path, before] of host) {
    if (!sandbox.has(path) && !leftOut(path, before.type === "directory")) {
      changes.push({ kind: "D", path, differs: [], before });
    }
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

export function countChanges(changes: readonly Change[]): ChangeCounts {
  return {
    added: changes.filter((c) => c.kind === "A").length,
    modified: changes.filter((c) => c.kind === "M").length,
    deleted: changes.filter((c) => c.kind === "D").length,
  };
}

/** A path safe to show on one line: control characters and quotes make it a JSON string. */
export function displayPath(path: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for.
  return /[\u0000-\u001f\u007f-\u009f"\u202a-\u202e\u2066-\u2069]/.test(path) ? JSON.stringify(path) : path;
}

const octal = (mode: number) => mode.toString(8).padStart(3, "0");

/** "A src/new.py", "M run.sh (mode 644 -> 755)", "A link -> ../x", "D old/". */
export function formatChange(c: Change): string {
  const entry = c.after ?? c.before;
  const suffix = entry?.type === "directory" ? "/" : "";
  const notes: string[] = [];
  if (c.kind !== "D" && c.after?.type === "symlink") notes.push(`-> ${displayPath(c.after.linkname ?? "")}`);
  if (c.differs.includes("type")) notes.push(`(${c.before?.type} -> ${c.after?.type})`);
  if (c.differs.includes("mode"))
    notes.push(`(mode ${octal(c.before?.mode ?? 0)} -> ${octal(c.after?.mode ?? 0)})`);
  if (c.kind !== "D" && c.after && !["file", "directory", "symlink"].includes(c.after.type)) {
    notes.push(`(${c.after.type})`);
  }
  if (c.after?.hardLinkTo !== undefined) notes.push(`(hard link to ${displayPath(c.after.hardLinkTo)})`);
  return [`${c.kind} ${displayPath(c.path)}${suffix}`, ...notes].join(" ");
}
