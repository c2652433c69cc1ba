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
import { safeComponents } from "../../host/paths/strict-paths.js";
import type { CopyListing, ListedPath, WorkspaceEntry } from "../../sandbox.js";
import { entriesOf } from "../archive-entries.js";
import type { ArchiveRead } from "../sandbox-archive.js";

/** Starts `argv` in the sandbox as its user; its stdout, and a check that it exited 0. */
export type RunProgram = (argv: string[]) => Promise<ArchiveRead>;

/** Bytes of path arguments per fetch exec: far below the kernel's 128 KiB per argument and 2 MiB in all. */
const FETCH_ARG_BYTES = 256 * 1024;
/** Most bytes a listing may be (about 100 per path): beyond it the listing is refused. */
const MAX_LISTING_BYTES = 512 * 1024 * 1024;
const FIELDS = 8;

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
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of read.stream as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_LISTING_BYTES) {
      read.stream.destroy();
      throw new SandboxError(`the workspace listing passed ${MAX_LISTING_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  await read.check?.();
  return parseListing(Buffer.concat(chunks, bytes));
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The listing's fields; throws `SandboxError` on anything malformed (it is the sandbox's output). */
export function parseListing(out: Buffer): CopyListing {
  const fields: Buffer[] = [];
  let at = 0;
  for (;;) {
    const end = out.indexOf(0, at);
    if (end < 0) break;
    fields.push(out.subarray(at, end));
    at = end + 1;
  }
  const bad = (why: string) => new SandboxError(`the workspace listing is malformed (${why})`);
  if (at !== out.length) throw bad("trailing bytes");
  if (fields[0]?.toString() !== "H") throw bad("no header");
  const startedNs = integer(fields[1], bad);
  const paths: ListedPath[] = [];
  const skipped: CopyListing["skipped"] = [];
  let i = 2;
  for (;;) {
    const tag = fields[i]?.toString();
    if (tag === undefined) throw bad("no end marker: the listing was cut short");
    if (tag === "E") {
      const how = fields[i + 1]?.toString();
      if ((how !== "ok" && how !== "more") || i + 2 !== fields.length) throw bad("end marker");
      return { startedNs, paths, complete: how === "ok", skipped };
    }
    const kind = KINDS[tag];
    if (kind === undefined || i + FIELDS > fields.length) throw bad(`record ${paths.length + 1}`);
    const raw = fields[i + 1] as Buffer;
    const path = text(raw);
    const parts = path === undefined ? undefined : safeComponents(path);
    const detail = text(fields[i + 7] as Buffer);
    if (path === undefined || !Array.isArray(parts) || parts.join("/") !== path || detail === undefined) {
      skipped.push({
        path: raw.toString("utf8"),
        reason: path === undefined || detail === undefined ? "name or link target not UTF-8" : "unsafe name",
      });
    } else {
      paths.push({
        path,
        kind,
        mode: Number(integer(fields[i + 2], bad) & 0o777n),
        size: Number(integer(fields[i + 3], bad)),
        mtimeNs: integer(fields[i + 4], bad),
        ctimeNs: integer(fields[i + 5], bad),
        ino: integer(fields[i + 6], bad),
        detail,
      });
    }
    i += FIELDS;
  }
}

function text(bytes: Buffer): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

function integer(field: Buffer | undefined, bad: (why: string) => Error): bigint {
  const s = field?.toString("latin1");
  if (s === undefined || !/^[0-9]{1,20}$/.test(s)) throw bad(`not a number: ${JSON.stringify(s)}`);
  return BigInt(s);
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
    let complete = false;
    try {
      for await (const entry of entriesOf(read.stream, "")) if (entry.type === "file") yield entry;
      complete = true;
    } finally {
      // Stopping early (a limit) lets go of the exec.
      if (!complete) read.stream.destroy();
    }
    await read.check?.();
  }
}
