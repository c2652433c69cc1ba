/**
 * harness loads `.env` from the current directory, which is often the workspace the sandbox can
 * write. An existing `.env` is mounted read-only, but a task can still create one where there was
 * none (or in a subdirectory, or copy mode's apply can write one). For every sandbox, from before it
 * opens until its leftover processes are ended, this records in harness's state directory:
 * - a span during which the workspace was writable by a sandbox (dotenv-load.ts doubts any `.env`
 *   under it whose last change falls in one), opened first so that a harness that dies mid-run
 *   leaves it open;
 * - the content of each `.env` harness would load (the workspace's own and the current
 *   directory's, when inside the workspace) that changed meanwhile, as sandbox-written, at its path
 *   and wherever that content goes.
 * and gives a line for each such `.env`.
 */

import { realpathSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import createDebug from "debug";
import { isProcessAlive } from "../../state/liveness.js";
import { readEnvFile } from "./dotenv-load.js";
import {
  addHash,
  appendSpan,
  markSandboxWritten,
  readSpans,
  updateEnvFileRecord,
  type WriteSpan,
} from "./dotenv-records.js";

const log = createDebug("harness:dotenv");

/** What the watch saw of one path: its content hash, "absent", or "other" (link, directory…). */
function stateOf(path: string): string {
  const read = readEnvFile(path);
  return read.kind === "file" ? read.hash : read.kind === "absent" ? "absent" : `other:${read.what}`;
}

function realOrResolved(path: string): string {
  try {
    return realpathSync(resolve(path));
  } catch {
    return resolve(path);
  }
}

export interface EnvFileWatch {
  /** Ends the span and records what changed; one line per changed `.env`. Only the first call acts. */
  close(): string[];
}

/**
 * Call before the sandbox opens; `close` after it stopped (its leftover processes ended) and after
 * copy mode applied its changes.
 */
export function watchEnvFiles(workspace: string, cwd: string = process.cwd()): EnvFileWatch {
  const root = realOrResolved(workspace);
  const paths = [...new Set([join(root, ".env"), join(realOrResolved(cwd), ".env")])].filter((path) => {
    const inside = relative(root, path);
    return !inside.startsWith("..") && inside !== path;
  });
  const before = new Map(paths.map((path) => [path, stateOf(path)]));
  const span: WriteSpan = { workspace: root, pid: process.pid, start: Date.now() };
  try {
    appendSpan(span);
  } catch (error) {
    log("recording the span of %s failed: %s", root, (error as Error).message);
  }
  let closed = false;
  return {
    close(): string[] {
      if (closed) return [];
      closed = true;
      endSpans(span);
      const lines: string[] = [];
      for (const [path, was] of before) {
        const read = readEnvFile(path);
        const now = stateOf(path);
        if (now === was || now === "absent") continue;
        if (read.kind === "file") {
          updateEnvFileRecord(path, (record) => addHash(record.sandbox, read.hash, record.trusted));
          markSandboxWritten(read.hash);
        }
        const what = was === "absent" ? "created" : "changed";
        lines.push(
          `warning: ${path} was ${what} while the sandbox could write it; harness will not load its settings (API key, endpoint, workspace, engine) until you read it and run 'harness trust-env ${path}'`,
        );
      }
      return lines;
    },
  };
}

/**
 * Ends this run's span, and the spans of harness processes that died in a run of this workspace:
 * this run's end has ended every process the sandbox left (or another harness still running there
 * keeps its own span open).
 */
function endSpans(own: WriteSpan): void {
  const end = Date.now();
  try {
    appendSpan({ ...own, end });
    for (const span of readSpans(own.workspace)) {
      if (span.end === undefined && span.pid !== own.pid && !isProcessAlive(span.pid))
        appendSpan({ ...span, end });
    }
  } catch (error) {
    log("recording the end of the span of %s failed: %s", own.workspace, (error as Error).message);
  }
}
