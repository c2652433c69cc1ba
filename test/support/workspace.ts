import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The uid:gid sandbox tests run as when the test process is root (CI): never root in the sandbox. */
export const TEST_UID = 1000;
export const TEST_GID = 1000;

/** A fresh workspace directory owned by a normal user, removed by the returned disposer. */
export function makeWorkspace(prefix = "harness-ws-"): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  if (process.getuid?.() === 0) chownSync(path, TEST_UID, TEST_GID);
  return {
    path,
    [Symbol.dispose]() {
      rmSync(path, { recursive: true, force: true });
    },
  };
}
