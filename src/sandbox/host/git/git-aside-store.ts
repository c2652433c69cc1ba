/**
 * The quarantine for git files a bind-mode run planted (git-aside.ts): `$XDG_STATE_HOME/harness/
 * git-aside/<id>/`, one directory per run end, holding `manifest.json` and the moved entries as
 * `items/<n>`. It lies outside every workspace, so no later sandbox can reach it to move anything
 * back or change it before the owner looks. The entries keep their bytes but not their names:
 * nothing in it is called `.git`, so no git discovery from a directory above finds a repository there.
 */
import { cp, lstat, mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../../../errors.js";
import { harnessStateDir } from "../../../state/state-dir.js";

/** One entry moved out of the workspace. */
export interface AsideItem {
  /** Workspace-relative path it had (and gets back). */
  path: string;
  /** What the run did to it. */
  how: "created" | "changed";
  /** Where it is now, relative to the quarantine directory: `items/<n>`. */
  stored: string;
}

/** `manifest.json`: what the restore command reads. */
export interface AsideManifest {
  /** The workspace's real path. */
  workspace: string;
  /** What is still in the quarantine. */
  items: AsideItem[];
}

/** `$XDG_STATE_HOME/harness/git-aside`. */
function gitAsideRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(harnessStateDir(env), "git-aside");
}

/** A new, empty quarantine directory (mode 0700) named after the time; its id is its name. */
export async function createAsideDir(
  env: NodeJS.ProcessEnv = process.env,
  now = new Date(),
): Promise<{ id: string; dir: string }> {
  const root = gitAsideRoot(env);
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(root, `${now.toISOString().replace(/[:.]/g, "-")}-`));
  await mkdir(join(dir, "items"), { mode: 0o700 });
  return { id: dir.slice(root.length + 1), dir };
}

/** The quarantine directory of `id`, which must be one plain name (it is typed by a user). */
export function asideDirOf(id: string, env: NodeJS.ProcessEnv = process.env): string {
  if (id === "" || id === "." || id === ".." || id.includes("/") || id.includes("\0"))
    throw new ConfigError(`not a quarantine id: ${JSON.stringify(id)}`);
  return join(gitAsideRoot(env), id);
}

export async function writeManifest(dir: string, manifest: AsideManifest): Promise<void> {
  const temporary = join(dir, "manifest.json.new");
  await writeFile(temporary, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, join(dir, "manifest.json"));
}

export async function readManifest(dir: string): Promise<AsideManifest> {
  let text: string;
  try {
    text = await readFile(join(dir, "manifest.json"), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT")
      throw new ConfigError(`nothing to restore in ${dir}: already restored, or not an id harness printed`);
    throw error;
  }
  const manifest = JSON.parse(text) as AsideManifest;
  if (typeof manifest.workspace !== "string" || !Array.isArray(manifest.items))
    throw new ConfigError(`${join(dir, "manifest.json")} is not a manifest harness wrote`);
  return manifest;
}

/**
 * Moves the entry at `from` to `to`, which must not exist, as it is: a symlink stays a symlink, a
 * directory moves with everything in it. One rename(2) when both are on one file system; across file
 * systems (EXDEV) a copy that keeps symlinks as they are, then the removal of the original (never
 * following a link inside it). A copy that fails is removed, and the original stays.
 */
export async function moveEntry(from: string | Buffer, to: string | Buffer): Promise<void> {
  try {
    await rename(from, to);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
  }
  // A name that is not UTF-8 (byte-names.ts) is a Buffer, which cp does not take. Only a hook file
  // can be named so at the top of a move, and git runs hooks by fixed names: it stays, listed.
  if (typeof from !== "string" || typeof to !== "string")
    throw new Error("its name is not UTF-8, and it cannot be copied across file systems");
  try {
    await cp(from, to, {
      recursive: true,
      verbatimSymlinks: true,
      dereference: false,
      errorOnExist: true,
      force: false,
      preserveTimestamps: true,
    });
  } catch (error) {
    await rm(to, { recursive: true, force: true });
    throw error;
  }
  await rm(from, { recursive: true });
}

/** True when something (anything, a dangling symlink included) is at `path`. */
export async function entryExists(path: string | Buffer): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}
