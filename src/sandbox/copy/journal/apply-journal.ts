/**
 * Copy mode's apply journal: `$XDG_STATE_HOME/harness/applies/<id>.json`, outside every workspace
 * (the sandbox can write anything in one). It says where an apply stands, so that an apply killed
 * at any step is finished or undone by the next command (recover-applies.ts):
 *
 * - `staging`: the changes are being written into `<workspace>/.harness/apply-<id>/`; nothing else in
 *   the workspace has changed. Recovery rolls back: the staging directory goes.
 * - `committed`: everything is staged and checked, and the list of what goes where is here. From
 *   this point the apply is carried through: recovery rolls forward (moves deletions aside, renames
 *   the staged files in, idempotently), then the staging directory and the journal go.
 *
 * The staging directory is inside the workspace so that every rename stays on its filesystem, and
 * under `.harness/`, which copy mode never copies, compares or applies (ignore-rules.ts); it holds a
 * `.gitignore` of `*`, so git shows none of it.
 */
import { randomBytes } from "node:crypto";
import { access, mkdir, readdir, readFile, rename, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ProcessStamp } from "../../../state/process-stamp.js";
import { harnessStateDir } from "../../../state/state-dir.js";
import type { StagedOp } from "../../host/extract/staged-extract.js";

/** The workspace directory that holds the staging directories: copy mode leaves it out. */
export const HARNESS_DIR = ".harness";

export interface ApplyJournal {
  version: 1;
  id: string;
  /** The workspace's real path. */
  root: string;
  /** The staging directory's name in `<root>/.harness/`. */
  staging: string;
  /** True when this apply created `<root>/.harness/` (removed again when empty). */
  madeHarnessDir: boolean;
  /** The process applying: while it runs, nobody else touches this apply. */
  owner: ProcessStamp;
  state: "staging" | "committed";
  /** Paths to delete, already allowed by the apply's policy (committed only). */
  deletions: string[];
  /** What to put in place, in archive order (committed only). */
  ops: StagedOp[];
  /** Paths refused while staging: nothing inside them is placed. */
  refusedPaths: string[];
  chownTo?: { uid: number; gid: number } | undefined;
  /** Symlinks already in the workspace, resolved again once the links are placed. */
  recheckLinks: string[];
}

/** `$XDG_STATE_HOME/harness/applies`. */
export function journalDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(harnessStateDir(env), "applies");
}

export function newApplyId(): string {
  return `${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(4).toString("hex")}`;
}

/** Writes the journal whole or not at all (a temp file renamed over it). */
export async function writeJournal(
  journal: ApplyJournal,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const dir = journalDir(env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${journal.id}.json`);
  await writeFile(`${path}.new`, `${JSON.stringify(journal)}\n`, { mode: 0o600 });
  await rename(`${path}.new`, path);
}

export async function removeJournal(id: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await unlink(join(journalDir(env), `${id}.json`)).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  });
}

/** Whether journal `id` is still there (not yet removed by whoever finished it). */
export async function journalExists(id: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  return access(join(journalDir(env), `${id}.json`)).then(
    () => true,
    () => false,
  );
}

/** Every journal in the state directory (a `.new` left by a kill mid-write is not one yet). */
export async function readJournals(env: NodeJS.ProcessEnv = process.env): Promise<ApplyJournal[]> {
  const dir = journalDir(env);
  const names = await readdir(dir).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [] as string[];
    throw error;
  });
  const journals: ApplyJournal[] = [];
  for (const name of names.filter((n) => n.endsWith(".json")).sort()) {
    // Written whole by a rename: one that does not parse was not written by harness; passed over.
    const parsed = await readFile(join(dir, name), "utf8")
      .then((text) => JSON.parse(text) as ApplyJournal)
      .catch(() => undefined);
    if (parsed?.version === 1 && `${parsed.id}.json` === name) journals.push(parsed);
  }
  return journals;
}
