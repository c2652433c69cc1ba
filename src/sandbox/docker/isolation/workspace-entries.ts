/**
 * The copy container's workspace entry by entry, through the Docker archive API, for a checkpoint
 * of copy mode; reading the tar stream is `../../copy/archive-entries.ts`, the same for every engine.
 */
import { basename } from "node:path";
import type Docker from "dockerode";
import { entriesOf } from "../../copy/archive-entries.js";
import type { WorkspaceEntry } from "../../sandbox.js";
import { archiveOf } from "./copy-container.js";

/** Entries of `workdir` in `container`, parents first as the archive gives them. */
export async function* workspaceEntries(
  container: Docker.Container,
  workdir: string,
): AsyncGenerator<WorkspaceEntry> {
  const source = await archiveOf(container, workdir);
  try {
    yield* entriesOf(source, `${basename(workdir)}/`);
  } finally {
    // Stopping early (a limit) must let go of the engine's stream, or the container stays busy.
    source.destroy();
  }
}
