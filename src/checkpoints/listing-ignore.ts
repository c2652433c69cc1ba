/**
 * git's ignore rules over copy mode's listing (the sandbox's paths with their lstat), exactly as the
 * host walk applies them (snapshot.ts): the global excludes, `.git/info/exclude`, each `.gitignore`
 * from the root down, the root's `.harnessignore` above them all; nothing inside a `.git`, and `.git`
 * itself is never matched. An ignore file is read only when it is a regular file in the listing; its
 * content comes from `content`, which may answer "need": it has to be fetched from the sandbox first
 * (the caller fetches them all and evaluates again).
 */
import type { CopyListing, ListedPath } from "../sandbox/sandbox.js";
import type { IgnoredPaths, SkippedPath } from "./checkpoint-types.js";
import { isIgnored, parseIgnoreFile, type RuleSet } from "./git-ignore.js";
import { MAX_IGNORE_FILE_BYTES } from "./ignore-sources.js";

/** Ignored paths named in a checkpoint; more are only counted (as snapshot.ts). */
const MAX_IGNORED_NAMED = 500;

export type IgnoreContent = (entry: ListedPath) => Buffer | "need";

export interface ListingView {
  /** The paths kept, parents before children. */
  kept: ListedPath[];
  /** Top-most ignored paths (absent without rules). */
  ignored?: IgnoredPaths;
  /** Ignored directories: the next listing need not walk them. */
  prune: string[];
  /** Ignore files not applied (too large). */
  skipped: SkippedPath[];
  /** Ignore files whose content is needed before this view can be trusted. */
  needs: ListedPath[];
}

export function applyIgnoreRules(
  listing: CopyListing,
  gitIgnore: { global?: RuleSet | undefined } | undefined,
  content: IgnoreContent,
): ListingView {
  const children = new Map<string, ListedPath[]>();
  for (const entry of listing.paths) {
    const slash = entry.path.lastIndexOf("/");
    const parent = slash < 0 ? "" : entry.path.slice(0, slash);
    const list = children.get(parent) ?? [];
    list.push(entry);
    children.set(parent, list);
  }
  const view: ListingView = { kept: [], prune: [], skipped: [], needs: [] };
  if (gitIgnore === undefined) {
    view.kept = listing.paths;
    return view;
  }
  const ignored: IgnoredPaths = { paths: [] };
  view.ignored = ignored;
  const byPath = new Map(listing.paths.map((entry) => [entry.path, entry]));

  const rulesOf = (path: string, base: string): RuleSet | undefined => {
    const entry = byPath.get(path);
    if (entry?.kind !== "file") return undefined;
    if (entry.size > MAX_IGNORE_FILE_BYTES) {
      view.skipped.push({
        path,
        reason: `over ${MAX_IGNORE_FILE_BYTES / 1024} KiB: its ignore rules are not applied`,
      });
      return undefined;
    }
    const bytes = content(entry);
    if (bytes === "need") {
      view.needs.push(entry);
      return undefined;
    }
    return parseIgnoreFile(bytes, base);
  };

  const walk = (rel: string, above: readonly RuleSet[], top: readonly RuleSet[], rulesApply: boolean) => {
    const names = children.get(rel) ?? [];
    let below = above;
    if (rulesApply) {
      const own = rulesOf(rel === "" ? ".gitignore" : `${rel}/.gitignore`, rel);
      if (own !== undefined) below = [...above, own];
    }
    const sets = top.length === 0 ? below : [...below, ...top];
    const subdirectories: ListedPath[] = [];
    for (const entry of names) {
      const name = entry.path.slice(entry.path.lastIndexOf("/") + 1);
      const isDirectory = entry.kind === "directory" || entry.kind === "unreadable";
      if (sets.length > 0 && name !== ".git" && isIgnored(sets, entry.path, isDirectory)) {
        if (ignored.paths.length < MAX_IGNORED_NAMED) ignored.paths.push(entry.path);
        else ignored.more = (ignored.more ?? 0) + 1;
        if (entry.kind === "directory") view.prune.push(entry.path);
        continue;
      }
      view.kept.push(entry);
      if (entry.kind === "directory") subdirectories.push(entry);
    }
    for (const entry of subdirectories) {
      const inGit = entry.path.endsWith(".git") && (entry.path === ".git" || entry.path.endsWith("/.git"));
      const stop = inGit || !rulesApply;
      walk(entry.path, stop ? [] : below, stop ? [] : top, !stop);
    }
  };

  const above: RuleSet[] = [];
  if (gitIgnore.global !== undefined) above.push(gitIgnore.global);
  const exclude = rulesOf(".git/info/exclude", ".git/info");
  if (exclude !== undefined) above.push({ ...exclude, base: "" });
  const harness = rulesOf(".harnessignore", "");
  walk("", above, harness === undefined ? [] : [harness], true);
  return view;
}
