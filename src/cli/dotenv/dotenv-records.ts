/**
 * What harness remembers about `.env` files, in its state directory (which no sandbox can write):
 * - per `.env` path: the content it loaded last, contents the user trusts, and contents a sandbox
 *   wrote (seen changing during a run, or written by copy mode's apply);
 * - per content, wherever a file holding it is now: contents a sandbox wrote (a `.env` copied or
 *   restored from a checkpoint into another directory is still the sandbox's);
 * - per bind workspace: the spans of time during which a sandbox could write it (a run's start to
 *   the end of its leftover processes). A span whose harness died stays open until a later run of
 *   the same workspace has ended what was left.
 * The directory is fixed before `.env` is read, from the real environment, so a `.env` cannot move
 * it (XDG_STATE_HOME) and hide what was recorded.
 */

import { createHash } from "node:crypto";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import createDebug from "debug";
import { harnessStateDir } from "../../state/state-dir.js";

const log = createDebug("harness:dotenv");

/** Hashes kept per list: enough for a user's edits, bounded against a file that changes every run. */
const KEEP = 50;

let root: string | undefined;

/** Fixes where records live; cli.ts calls it with the environment as it was before `.env`. */
export function setDotenvRecordsRoot(env: NodeJS.ProcessEnv): void {
  root = join(harnessStateDir(env), "dotenv");
}

function recordsRoot(): string {
  root ??= join(harnessStateDir(process.env), "dotenv");
  return root;
}

export function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** What harness knows of one `.env` path. */
export interface EnvFileRecord {
  path: string;
  /** Hash of the content loaded last from this path. */
  loaded?: string | undefined;
  /** Contents loaded without doubt, or trusted with `harness trust-env`. */
  trusted: string[];
  /** Contents a sandbox wrote. */
  sandbox: string[];
}

function recordPath(path: string): string {
  return join(recordsRoot(), "files", `${sha256(path).slice(0, 32)}.json`);
}

export function readEnvFileRecord(path: string): EnvFileRecord {
  try {
    const data = JSON.parse(readFileSync(recordPath(path), "utf8")) as Partial<EnvFileRecord>;
    if (data.path === path) {
      return {
        path,
        loaded: typeof data.loaded === "string" ? data.loaded : undefined,
        trusted: Array.isArray(data.trusted) ? data.trusted.map(String) : [],
        sandbox: Array.isArray(data.sandbox) ? data.sandbox.map(String) : [],
      };
    }
  } catch {
    // No record yet (or an unreadable one): nothing known.
  }
  return { path, trusted: [], sandbox: [] };
}

/** Read, change, write back (atomically: a reader never sees half a file). Never throws. */
export function updateEnvFileRecord(path: string, change: (record: EnvFileRecord) => void): void {
  try {
    const record = readEnvFileRecord(path);
    change(record);
    record.trusted = record.trusted.slice(-KEEP);
    record.sandbox = record.sandbox.slice(-KEEP);
    const file = recordPath(path);
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    renameSync(tmp, file);
  } catch (error) {
    log("recording %s failed: %s", path, (error as Error).message);
  }
}

/** Adds `hash` to `list` (once, as the newest) and removes it from `other`. */
export function addHash(list: string[], hash: string, other?: string[]): void {
  const at = list.indexOf(hash);
  if (at >= 0) list.splice(at, 1);
  list.push(hash);
  if (other !== undefined) {
    const there = other.indexOf(hash);
    if (there >= 0) other.splice(there, 1);
  }
}

/** `sandbox-written/<sha256>`: an empty file per content a sandbox wrote. */
function sandboxContentPath(hash: string): string | undefined {
  return /^[0-9a-f]{64}$/.test(hash) ? join(recordsRoot(), "sandbox-written", hash) : undefined;
}

/** Records that a sandbox wrote this content, wherever it goes. Never throws. */
export function markSandboxWritten(hash: string): void {
  const path = sandboxContentPath(hash);
  if (path === undefined) return;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, "", { mode: 0o600 });
  } catch (error) {
    log("recording %s as sandbox-written failed: %s", hash, (error as Error).message);
  }
}

/** The user read this content and vouches for it (`harness trust-env`). Never throws. */
export function unmarkSandboxWritten(hash: string): void {
  const path = sandboxContentPath(hash);
  try {
    if (path !== undefined) rmSync(path, { force: true });
  } catch (error) {
    log("forgetting %s as sandbox-written failed: %s", hash, (error as Error).message);
  }
}

/** Whether a sandbox wrote this content (anywhere). */
export function isSandboxWritten(hash: string): boolean {
  const path = sandboxContentPath(hash);
  return path !== undefined && existsSync(path);
}

/** A span of time during which a sandbox could write `workspace`; open while `end` is unset. */
export interface WriteSpan {
  workspace: string;
  pid: number;
  start: number;
  end?: number;
}

function spansFile(workspace: string): string {
  return join(recordsRoot(), "spans", `${sha256(workspace).slice(0, 32)}.jsonl`);
}

/** Spans of `workspace`, one per run, each closed when a line with its end was appended. */
export function readSpans(workspace: string): WriteSpan[] {
  let text: string;
  try {
    text = readFileSync(spansFile(workspace), "utf8");
  } catch {
    return [];
  }
  const spans = new Map<string, WriteSpan>();
  for (const line of text.split("\n")) {
    try {
      const span = JSON.parse(line) as WriteSpan;
      if (span.workspace !== workspace || typeof span.start !== "number") continue;
      const key = `${span.pid}:${span.start}`;
      const known = spans.get(key);
      if (known === undefined || span.end !== undefined) spans.set(key, span);
    } catch {
      // A torn or empty line: skip it.
    }
  }
  return [...spans.values()];
}

/** Appends a span line; O_APPEND keeps concurrent harness processes' lines whole. */
export function appendSpan(span: WriteSpan): void {
  const file = spansFile(span.workspace);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  appendFileSync(file, `${JSON.stringify(span)}\n`, { mode: 0o600 });
}
