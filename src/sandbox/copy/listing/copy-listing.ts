/**
 * Copy mode's per-step checkpoint without an archive of the whole copy: workspace-listing.py, run in
 * the sandbox as its user, lists every path with its lstat (`list`), and tars only the regular files
 * asked for (`fetch`). How the program's stdout reaches the host is the engine's (`RunProgram`:
 * a Docker exec, a pod's exec); the parsing and the checks here are the same for every engine, and
 * trust nothing the program wrote: every name is checked safe, every field parsed strictly, a
 * listing without its end marker is refused, and the tar is read by the strict reader
 * (../archive-entries.ts).
 */
import { SandboxError } from "../../../errors.js";
import { programText } from "../../exec/program-text.js";
import type { CopyListing, ListedPath, WorkspaceEntry } from "../../sandbox.js";
import { entriesOf } from "../archive-entries.js";
import type { ArchiveRead } from "../sandbox-archive.js";

/** Starts `argv` in the sandbox as its user; its stdout, and a check that it exited 0. */
export type RunProgram = (argv: string[]) => Promise<ArchiveRead>;

/** Bytes of path arguments per fetch exec: far below the kernel's 128 KiB per argument and 2 MiB in all. */
const FETCH_ARG_BYTES = 256 * 1024;
/** Longest one exec may take: a sandbox that stops answering ends the snapshot, never hangs it. */
const EXEC_DEADLINE_MS = 60_000;
/** Most bytes a listing may be (about 100 per path): beyond it the listing is refused. */
const MAX_LISTING_BYTES = 512 * 1024 * 1024;

const KINDS: Record<string, ListedPath["kind"]> = {
  d: "directory",
  f: "file",
  l: "symlink",
  o: "other",
  u: "unreadable",
};

function argv(mode: "list" | "fetch", workdir: string, args: readonly string[]): string[] {
  const program = programText(new URL("./workspace-listing.py", import.meta.url));
  return ["python3", "-I", "-S", "-c", program, mode, workdir, ...args];
}

export async function listCopy(
  run: RunProgram,
  workdir: string,
  prune: readonly string[],
  maxEntries: number,
): Promise<CopyListing> {
  const read = await run(argv("list", workdir, [String(maxEntries), ...prune]));
  const timer = deadline(read);
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of read.stream as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > MAX_LISTING_BYTES) {
        read.stream.destroy();
        throw new SandboxError(`the workspace listing passed ${MAX_LISTING_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    await read.check?.();
  } finally {
    clearTimeout(timer);
  }
  return parseListing(Buffer.concat(chunks, bytes));
}

/** Ends the read with a `SandboxError` after EXEC_DEADLINE_MS. */
function deadline(read: ArchiveRead): NodeJS.Timeout {
  return setTimeout(() => {
    read.stream.destroy(
      new SandboxError(`the workspace listing took longer than ${EXEC_DEADLINE_MS / 1000} s`),
    );
  }, EXEC_DEADLINE_MS);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
/** A name that safeComponents would change or refuse: absolute, empty parts, "." or "..", a backslash. */
const UNCLEAN = /^\/|\/$|\/\/|\\|(^|\/)\.\.?(\/|$)/;

/**
 * The listing's records; throws `SandboxError` on anything malformed (it is the sandbox's output).
 * One pass over the bytes, no per-field copies: at 10,000 paths this runs at every step.
 */
export function parseListing(out: Buffer): CopyListing {
  const bad = (why: string) => new SandboxError(`the workspace listing is malformed (${why})`);
  let at = 0;
  /** The next field's [start, end). */
  const next = (): [number, number] => {
    const end = out.indexOf(0, at);
    if (end < 0) throw bad("no end marker: the listing was cut short");
    const field: [number, number] = [at, end];
    at = end + 1;
    return field;
  };
  const str = ([a, b]: [number, number]) => out.toString("latin1", a, b);
  /** A decimal field as a number (nanoseconds lose their last digits: ms are what is used). */
  const num = ([a, b]: [number, number]): number => {
    if (b === a || b - a > 20) throw bad(`not a number: ${JSON.stringify(str([a, b]))}`);
    let value = 0;
    for (let i = a; i < b; i++) {
      const digit = (out[i] as number) - 0x30;
      if (digit < 0 || digit > 9) throw bad(`not a number: ${JSON.stringify(str([a, b]))}`);
      value = value * 10 + digit;
    }
    return value;
  };
  if (str(next()) !== "H") throw bad("no header");
  const startedMs = num(next()) / 1e6;
  const paths: ListedPath[] = [];
  const skipped: CopyListing["skipped"] = [];
  for (;;) {
    const tag = str(next());
    if (tag === "E") {
      const how = str(next());
      if ((how !== "ok" && how !== "more") || at !== out.length) throw bad("end marker");
      return { startedMs, paths, complete: how === "ok", skipped };
    }
    const kind = KINDS[tag];
    if (kind === undefined) throw bad(`record ${paths.length + 1}`);
    const rawPath = next();
    const statStart = at;
    const mode = num(next());
    const size = num(next());
    const mtime = num(next());
    const ctime = num(next());
    num(next());
    const key = `${tag}${out.toString("latin1", statStart, at - 1)}`;
    const path = text(out, rawPath);
    const detail = text(out, next());
    if (path === undefined || detail === undefined) {
      skipped.push({ path: out.toString("utf8", ...rawPath), reason: "name or link target not UTF-8" });
    } else if (path === "" || UNCLEAN.test(path)) {
      skipped.push({ path, reason: "unsafe name" });
    } else {
      paths.push({
        path,
        kind,
        mode: mode & 0o777,
        size,
        mtimeMs: mtime / 1e6,
        ctimeMs: ctime / 1e6,
        key,
        detail,
      });
    }
  }
}

/** The field as UTF-8, or undefined when it is not; ASCII (nearly every name) takes the short way. */
function text(out: Buffer, [a, b]: [number, number]): string | undefined {
  let ascii = true;
  for (let i = a; i < b; i++) {
    if ((out[i] as number) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return out.toString("latin1", a, b);
  try {
    return utf8.decode(out.subarray(a, b));
  } catch {
    return undefined;
  }
}

/**
 * The regular files named, a few hundred KiB of names per exec; each exec's tar read strictly (names
 * checked safe; only regular files are expected, anything else is left out).
 */
export async function* fetchFromCopy(
  run: RunProgram,
  workdir: string,
  paths: readonly string[],
): AsyncGenerator<WorkspaceEntry> {
  let at = 0;
  while (at < paths.length) {
    const batch: string[] = [];
    let bytes = 0;
    while (at < paths.length && (batch.length === 0 || bytes < FETCH_ARG_BYTES)) {
      const path = paths[at++] as string;
      bytes += Buffer.byteLength(path) + 1;
      batch.push(path);
    }
    const read = await run(argv("fetch", workdir, batch));
    const timer = deadline(read);
    let complete = false;
    try {
      for await (const entry of entriesOf(read.stream, "")) if (entry.type === "file") yield entry;
      complete = true;
      await read.check?.();
    } finally {
      clearTimeout(timer);
      // Stopping early (a limit) lets go of the exec.
      if (!complete) read.stream.destroy();
    }
  }
}
