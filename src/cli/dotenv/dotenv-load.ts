/**
 * Loads `./.env` the way dotenv-policy.ts decides, instead of letting dotenv write every key into
 * `process.env`: a `.env` in a workspace may have been written by the sandbox.
 */

import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parse } from "dotenv";
import { isProcessAlive } from "../../state/liveness.js";
import { malformedDotenvLines, malformedDotenvNotes } from "./dotenv-malformed.js";
import { type DotenvFacts, type Doubt, decideDotenv } from "./dotenv-policy.js";
import {
  addHash,
  isSandboxWritten,
  readEnvFileRecord,
  readSpans,
  setDotenvRecordsRoot,
  sha256,
  updateEnvFileRecord,
} from "./dotenv-records.js";

/** A `.env` as read from disk, never through a symbolic link. */
export type EnvFileRead =
  | { kind: "absent" }
  | { kind: "not-a-file"; what: string }
  | { kind: "file"; content: Buffer; hash: string; ctimeMs: number };

/**
 * lstat first, then open with O_NOFOLLOW (a link swapped in between is refused, not followed) and
 * O_NONBLOCK (a FIFO planted as `.env` must not hang harness), and check what was opened.
 */
export function readEnvFile(path: string): EnvFileRead {
  let info: ReturnType<typeof lstatSync>;
  try {
    info = lstatSync(path);
  } catch {
    return { kind: "absent" };
  }
  if (info.isSymbolicLink()) return { kind: "not-a-file", what: "a symbolic link" };
  if (!info.isFile()) return { kind: "not-a-file", what: "not a regular file" };
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return { kind: "not-a-file", what: "a symbolic link" };
    return code === "ENOENT" ? { kind: "absent" } : { kind: "not-a-file", what: `unreadable (${code})` };
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isFile()) return { kind: "not-a-file", what: "not a regular file" };
    const content = readFileSync(fd);
    return { kind: "file", content, hash: sha256(content), ctimeMs: opened.ctimeMs };
  } finally {
    closeSync(fd);
  }
}

/** Margin around a span, against clock granularity: in doubt, the file counts as changed in it. */
const SLACK_MS = 2000;

/**
 * Whether `path` may come from a sandbox: its content was recorded as sandbox-written (at this path
 * or at any other), or it last changed while a bind-mode sandbox of a directory holding it could
 * write there.
 */
export function doubtOf(path: string, hash: string, ctimeMs: number): Doubt | undefined {
  const record = readEnvFileRecord(path);
  if (record.trusted.includes(hash)) return undefined;
  if (record.sandbox.includes(hash) || isSandboxWritten(hash)) return { kind: "sandbox-wrote" };
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    for (const span of readSpans(dir)) {
      // An open span of a live harness is a run going on; of a dead one, a run nobody finished.
      const end = span.end ?? (isProcessAlive(span.pid) ? Date.now() : Number.POSITIVE_INFINITY);
      if (ctimeMs >= span.start - SLACK_MS && ctimeMs <= end + SLACK_MS)
        return { kind: "changed-under-sandbox", workspace: dir };
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Reads `cwd/.env`, sets in `env` the keys the policy allows (never one `env` already has, as
 * dotenv does), writes the policy's lines, and records what was loaded. Records live in the state
 * directory `env` names before anything is loaded.
 */
export function loadDotenvFile(
  env: NodeJS.ProcessEnv,
  cwd: string,
  say: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): void {
  setDotenvRecordsRoot(env);
  const path = join(cwd, ".env");
  const read = readEnvFile(path);
  const record = read.kind === "file" ? readEnvFileRecord(path) : undefined;
  let facts: DotenvFacts = read.kind === "file" ? { kind: "absent" } : read;
  if (read.kind === "file") {
    facts = {
      kind: "file",
      parsed: parse(read.content),
      doubt: doubtOf(path, read.hash, read.ctimeMs),
      changed: record?.loaded !== read.hash,
      firstSeen: record?.loaded === undefined,
    };
  }
  const decision = decideDotenv(path, facts);
  for (const [key, value] of Object.entries(decision.load)) {
    if (!Object.hasOwn(env, key)) env[key] = value;
  }
  for (const line of decision.lines) say(line);
  // A line dotenv skips would leave its key "not set" with nothing said why.
  if (read.kind === "file") {
    for (const note of malformedDotenvNotes(path, malformedDotenvLines(read.content)))
      say(`harness: ${note}`);
  }
  if (read.kind !== "file" || facts.kind !== "file") return;
  const trustNow = facts.doubt === undefined && !record?.trusted.includes(read.hash);
  if (facts.changed || trustNow) {
    updateEnvFileRecord(path, (r) => {
      r.loaded = read.hash;
      if (facts.kind === "file" && facts.doubt === undefined) addHash(r.trusted, read.hash);
    });
  }
}
