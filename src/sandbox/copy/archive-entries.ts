/**
 * The sandbox's copy of the workspace entry by entry, from the tar stream the engine hands over
 * (Docker's archive API, a pod's `tar -c` over exec), for a checkpoint of copy mode
 * (src/checkpoints/). Every name is checked as a safe relative path (others are left out and
 * named); the content of a file is handed over as the stream goes, and must be consumed before the
 * next entry comes. Nothing is written anywhere here.
 */
import type { Readable } from "node:stream";
import { extract as tarExtract } from "tar-stream";
import { safeComponents } from "../host/paths/strict-paths.js";
import type { WorkspaceEntry } from "../sandbox.js";

/** The entries of a tar stream whose names start with `prefix` (Podman: "/"). */
export async function* entriesOf(source: Readable, stripPrefix: string): AsyncGenerator<WorkspaceEntry> {
  const extract = tarExtract();
  source.on("error", (error) => extract.destroy(error));
  source.pipe(extract);
  let prefix = stripPrefix;
  let first = true;
  for await (const entry of extract) {
    const h = entry.header;
    if (first && h.name === "/" && h.type === "directory") prefix = "/";
    first = false;
    const parts = h.name.startsWith(prefix) ? safeComponents(h.name.slice(prefix.length)) : undefined;
    const path = Array.isArray(parts) ? parts.join("/") : undefined;
    if (path === undefined || path === "") {
      if (path === undefined && h.name !== prefix && `${h.name}/` !== prefix)
        yield { path: h.name, type: "unsafe name", mode: 0, size: 0, mtimeMs: 0 };
      entry.resume();
      continue;
    }
    const kind =
      h.type === "file" || h.type === "contiguous-file"
        ? "file"
        : h.type === "directory" || h.type === "symlink"
          ? h.type
          : h.type === "link"
            ? "hard link"
            : (h.type ?? "unknown");
    const out: WorkspaceEntry = {
      path,
      type: kind,
      mode: (h.mode ?? 0) & 0o777,
      size: h.size ?? 0,
      mtimeMs: h.mtime?.getTime() ?? 0,
    };
    if (h.type === "symlink") out.linkname = h.linkname ?? "";
    if (h.type === "link") {
      const target = safeComponents((h.linkname ?? "").slice(prefix.length));
      if (Array.isArray(target)) out.linkname = target.join("/");
    }
    if (kind === "file") out.content = entry as AsyncIterable<Buffer>;
    yield out;
    // Whatever the consumer left unread is skipped: the next entry comes only after it.
    entry.resume();
  }
}
