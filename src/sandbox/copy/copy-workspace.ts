/**
 * `--isolation copy` through dockerode: the workspace is never mounted. A fresh container gets a
 * copy of it in an anonymous volume at the workdir (the archive API cannot reach a tmpfs, and the
 * root filesystem is read-only); at the end its changes are read back, compared with the host,
 * shown, and written to the host only on request, through the strict extractor.
 *
 * The steps live in their own files; this module is the one place the rest of the harness imports
 * copy mode from.
 */
export { type ApplyResult, applyCopyChanges } from "./apply-copy-changes.js";
export { createCopyContainer } from "./copy-container.js";
export { copyLabels, LABEL_ISOLATION, type OwnerIdentity, ownerIdentity } from "./copy-container-labels.js";
export { exportCopyChanges, type WorkspaceChanges } from "./export-copy-changes.js";
export { isOrphanedCopy, removeOrphanedCopies } from "./orphaned-copies.js";
