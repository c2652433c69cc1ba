/**
 * A kept copy's record: `$XDG_STATE_HOME/harness/copies/<id>.json` (where it stands, small) and
 * `<id>.scan.json` (the workspace as it was copied in, written once), outside every workspace. A copy
 * whose changes were neither applied nor dropped outlives harness: `harness apply ID` compares it
 * with the host through this scan exactly as the session end would have (which paths the sandbox
 * deleted, which ones the user changed meanwhile), and `harness runs` lists a run's kept copy from
 * here without asking the engine.
 *
 * - `opening`: written before the container exists; the copy is being put in and no command has run,
 *   so nothing in it is the sandbox's work (the orphan sweep may remove it).
 * - `open`: the container started; from here its copy may hold work nobody has seen.
 * - `settled`: the changes were applied, or dropped, or there were none: nothing left to land.
 */
import { mkdir, readdir, readFile, rename, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ProcessStamp } from "../../../state/process-stamp.js";
import { harnessStateDir } from "../../../state/state-dir.js";
import type { ProtectOptions } from "../../sandbox-request.js";
import { loadIgnoreMatcher } from "../ignore-rules.js";
import type { WorkspaceCopyPlan } from "../workspace-archive.js";
import type { WorkspaceScan } from "../workspace-scan.js";

export type KeptCopyState = "opening" | "open" | "settled";

export interface KeptCopyRecord {
  version: 1;
  /** The run's id for `harness run`; `exec-…`, `shell-…`, `mcp-…` for the others. */
  id: string;
  /** The command that made it: "run", "exec", "shell", "mcp". */
  command: string;
  /** The workspace's real path. */
  root: string;
  /** Container path of the copy. */
  workdir: string;
  /** ISO time the copy was made. */
  createdAt: string;
  state: KeptCopyState;
  /** The harness process that made it: while it runs, the copy is its session's, not kept. */
  owner: ProcessStamp;
  limitBytes: number;
  maxEntries: number;
  protect: ProtectOptions;
}

/** `$XDG_STATE_HOME/harness/copies`. */
export function keptCopiesDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(harnessStateDir(env), "copies");
}

/** Ids name files: only what harness's own ids are made of. */
export function isCopyId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(id) && !id.includes("..");
}

async function writeWhole(path: string, text: string): Promise<void> {
  await writeFile(`${path}.new`, text, { mode: 0o600 });
  await rename(`${path}.new`, path);
}

/**
 * Writes the record (and, with `scan`, the scan) whole or not at all. A record in state `open` is
 * only ever written once its scan is (a copy is opened with the scan written beside the container's
 * creation: `writeKeptScan`).
 */
export async function writeKeptCopy(
  record: KeptCopyRecord,
  scan?: WorkspaceScan,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const dir = keptCopiesDir(env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (scan) await writeKeptScan(record.id, scan, env);
  await writeWhole(join(dir, `${record.id}.json`), `${JSON.stringify(record)}\n`);
}

/** The scan alone (100,000 entries take about half a second): written while the container is made. */
export async function writeKeptScan(
  id: string,
  scan: WorkspaceScan,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const dir = keptCopiesDir(env);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeWhole(join(dir, `${id}.scan.json`), `${JSON.stringify(scanToJson(scan))}\n`);
}

export async function setKeptCopyState(
  record: KeptCopyRecord,
  state: KeptCopyState,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  record.state = state;
  await writeKeptCopy(record, undefined, env);
}

export async function removeKeptCopy(id: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!isCopyId(id)) return;
  for (const name of [`${id}.json`, `${id}.scan.json`]) {
    await unlink(join(keptCopiesDir(env), name)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    });
  }
}

/** The record of `id`, or undefined when there is none (or it cannot be read). */
export async function readKeptCopy(
  id: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<KeptCopyRecord | undefined> {
  if (!isCopyId(id)) return undefined;
  try {
    const record = JSON.parse(
      await readFile(join(keptCopiesDir(env), `${id}.json`), "utf8"),
    ) as KeptCopyRecord;
    return record.version === 1 && record.id === id ? record : undefined;
  } catch {
    return undefined;
  }
}

/** Every record in the state directory. */
export async function readKeptCopies(env: NodeJS.ProcessEnv = process.env): Promise<KeptCopyRecord[]> {
  const names = await readdir(keptCopiesDir(env)).catch(() => [] as string[]);
  const ids = names
    .filter((n) => n.endsWith(".json") && !n.endsWith(".scan.json"))
    .map((n) => n.slice(0, -5));
  const records = await Promise.all(ids.map((id) => readKeptCopy(id, env)));
  return records.filter((r): r is KeptCopyRecord => r !== undefined);
}

/** The scan written with the record. */
export async function readKeptScan(id: string, env: NodeJS.ProcessEnv = process.env): Promise<WorkspaceScan> {
  const text = await readFile(join(keptCopiesDir(env), `${id}.scan.json`), "utf8");
  return scanFromJson(JSON.parse(text) as JsonScan);
}

type JsonScan = Omit<WorkspaceScan, "entries"> & {
  entries: (Omit<WorkspaceScan["entries"][number], "mtime"> & { mtime: number })[];
};

function scanToJson(scan: WorkspaceScan): JsonScan {
  return { ...scan, entries: scan.entries.map((e) => ({ ...e, mtime: e.mtime.getTime() })) };
}

function scanFromJson(json: JsonScan): WorkspaceScan {
  return { ...json, entries: json.entries.map((e) => ({ ...e, mtime: new Date(e.mtime) })) };
}

/** The plan the session's end would have compared with: the scan at copy time, the ignore rules now. */
export async function planOfKeptCopy(
  record: KeptCopyRecord,
  env: NodeJS.ProcessEnv = process.env,
): Promise<WorkspaceCopyPlan> {
  const scan = await readKeptScan(record.id, env);
  const ignored = await loadIgnoreMatcher(record.root);
  return { root: record.root, ignored, scan, limitBytes: record.limitBytes, maxEntries: record.maxEntries };
}
