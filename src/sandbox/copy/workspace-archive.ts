/**
 * Copy mode's way in: the host workspace packed into a tar stream for the Docker archive API.
 * Regular files, directories and symlinks (as symlinks, never followed) go in, owned by the sandbox
 * user so the agent can change them; ignored and special files stay out; the size and the number of
 * entries are bounded.
 */
import { once } from "node:events";
import type { FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { pack } from "tar-stream";
import { ConfigError, SandboxError } from "../../errors.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { formatBytes } from "../../text/units.js";
import { withBeneath } from "../host/paths/beneath.js";
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";
import { type IgnoreMatcher, loadIgnoreMatcher } from "./ignore-rules.js";
import { openRegularFile, scanWorkspace, type WorkspaceScan } from "./workspace-scan.js";

/** What copy mode learned about the workspace at open: reused when the changes are compared. */
export interface WorkspaceCopyPlan {
  /** Real path of the host workspace. */
  root: string;
  ignored: IgnoreMatcher;
  scan: WorkspaceScan;
  /** The copy limit in bytes. */
  limitBytes: number;
  /** Most files, directories and symlinks copied in, and read back (`--copy-max-files`). */
  maxEntries: number;
}

/** Scans the workspace and checks the limits before any container exists. */
export async function planWorkspaceCopy(
  root: string,
  limitBytes: number,
  maxEntries: number = SANDBOX_DEFAULTS.copyMaxFiles,
): Promise<WorkspaceCopyPlan> {
  const ignored = await loadIgnoreMatcher(root);
  const scan = await scanWorkspace(root, ignored, maxEntries);
  if (scan.totalBytes > limitBytes) {
    throw new ConfigError(
      `workspace '${root}' holds ${formatBytes(scan.totalBytes)} (${scan.totalBytes} bytes) of files, over the copy limit of ${formatBytes(limitBytes)}: raise --copy-limit or leave paths out with .harnessignore`,
    );
  }
  // Refused, not left out: the sandbox would see a workspace with a file missing, and a copy that
  // carried a U+FFFD name back would create a second file on the host.
  const first = scan.notUtf8[0];
  if (first !== undefined) {
    const more = scan.notUtf8.length > 1 ? ` and ${scan.notUtf8.length - 1} more` : "";
    throw new ConfigError(
      `workspace '${root}' has a name that is not valid UTF-8 (${sanitizeForTerminal(first, { oneLine: true })}${more}), which copy mode cannot carry exactly: rename it, leave it out with .harnessignore, or use --isolation bind`,
    );
  }
  return { root, ignored, scan, limitBytes, maxEntries };
}

/** The archive to send, and the producer's outcome: its error explains a failed upload best. */
export interface PackedWorkspace {
  stream: Readable;
  /** Resolves when every entry was packed; rejects with the reason packing stopped. */
  done: Promise<void>;
}

/**
 * The tar stream to put at the workspace directory. Its first entry is named "/": Docker applies
 * that header's owner and mode to the target directory itself (measured on Engine 20.10, where a
 * "./" entry is passed over), which makes the fresh root-owned volume writable for the sandbox user.
 */
export function packWorkspace(plan: WorkspaceCopyPlan, owner: { uid: number; gid: number }): PackedWorkspace {
  const archive = pack();
  const produce = async () => {
    archive.entry({ name: "/", type: "directory", mode: 0o755, ...owner });
    let total = 0;
    // Entries come parents first, so each directory is opened once (beneath.ts).
    await withBeneath(plan.root, async (beneath) => {
      for (const e of plan.scan.entries) {
        const header = { mode: e.mode, mtime: e.mtime, ...owner };
        if (e.type === "directory") archive.entry({ ...header, name: `${e.path}/`, type: "directory" });
        else if (e.type === "symlink") {
          archive.entry({ ...header, name: e.path, type: "symlink", linkname: e.linkname ?? "" });
        } else {
          const handle = await openRegularFile(beneath, e.path).catch((error: unknown) => {
            // Unreadable, or replaced by a symlink or fifo (itself or a parent) since the scan: left
            // out, and out of the diff.
            plan.scan.skipped.push({
              path: e.path,
              reason: `not copied (${(error as NodeJS.ErrnoException).code})`,
            });
            return undefined;
          });
          if (!handle) continue;
          total += await packFile(archive, handle, { ...header, name: e.path });
          if (total > plan.limitBytes) {
            throw new ConfigError(
              `workspace '${plan.root}' grew past the copy limit of ${formatBytes(plan.limitBytes)} while it was being copied`,
            );
          }
        }
      }
    });
    archive.finalize();
  };
  const done = produce().catch((error: unknown) => {
    const wrapped =
      error instanceof ConfigError || error instanceof SandboxError
        ? error
        : new SandboxError(`copying the workspace into the sandbox failed: ${(error as Error).message}`, {
            cause: error,
          });
    archive.destroy(wrapped);
    throw wrapped;
  });
  // tar-stream 3 packs are streamx streams; Readable.from gives dockerode the Node stream it expects.
  return { stream: Readable.from(archive), done };
}

/** Streams one open file into the archive with its size as of now; closes it; returns the bytes written. */
async function packFile(
  archive: ReturnType<typeof pack>,
  handle: FileHandle,
  header: { name: string; mode: number; mtime: Date; uid: number; gid: number },
): Promise<number> {
  try {
    const size = (await handle.stat()).size;
    const sink = archive.entry({ ...header, type: "file", size });
    let written = 0;
    for await (const chunk of handle.createReadStream({
      autoClose: false,
      start: 0,
      end: Math.max(0, size - 1),
    })) {
      const bytes = (chunk as Buffer).subarray(0, size - written);
      written += bytes.length;
      if (bytes.length > 0 && !sink.write(bytes)) await once(sink, "drain");
      if (written >= size) break;
    }
    if (written !== size) throw new SandboxError(`${header.name} shrank while it was being copied`);
    sink.end(undefined);
    await once(sink, "finish");
    return size;
  } finally {
    await handle.close();
  }
}
