/**
 * What the copy-mode apply fault tests share (copy-apply-faults, kept-copy-faults): a workspace the
 * task rewrites, deletes from and adds to, snapshots of it from the host, the state directories the
 * runs write, and the copy containers a killed harness leaves (only those of the test's workspace).
 */
import { chownSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { LABEL_WORKSPACE } from "../../src/sandbox/docker/container/labels.js";
import { TEST_GID, TEST_UID } from "../support/workspace.js";

/** Gives `path` to the workspace owner (as root; the owner is already the test's user otherwise). */
export function own(path: string): void {
  if (process.getuid?.() === 0) chownSync(path, TEST_UID, TEST_GID);
}

/** A shell task that rewrites old/f1..f`rewritten`, runs `remove`, and adds new/n1..n`added`. */
export function applyTask(rewritten: number, added: number, remove: string): string {
  return [
    `for i in $(seq 1 ${rewritten}); do echo "new $i" > old/f$i; done`,
    remove,
    "mkdir new",
    `for i in $(seq 1 ${added}); do echo "added $i" > new/n$i; done`,
  ].join("; ");
}

/** The workspace as `applyTask` leaves it, seen by `snapshotTree`. */
export function expectedTree(rewritten: number, added: number): Record<string, string> {
  const out: Record<string, string> = { old: "dir", new: "dir" };
  for (let i = 1; i <= rewritten; i++) out[`old/f${i}`] = `new ${i}\n`;
  for (let i = 1; i <= added; i++) out[`new/n${i}`] = `added ${i}\n`;
  return out;
}

/** Every path under `root` with its content ("dir" for a directory), but `leaveOut` at the top. */
export function snapshotTree(root: string, leaveOut?: string, rel = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(root, rel)).sort()) {
    const path = rel === "" ? name : `${rel}/${name}`;
    if (path === leaveOut) continue;
    if (lstatSync(join(root, path)).isDirectory()) {
      out[path] = "dir";
      Object.assign(out, snapshotTree(root, leaveOut, path));
    } else out[path] = readFileSync(join(root, path), "utf8");
  }
  return out;
}

/** Fresh state directories (XDG_STATE_HOME) for the runs of one test file; `removeAll` in afterAll. */
export function stateDirs(prefix: string): { make(): string; removeAll(): void } {
  const made: string[] = [];
  return {
    make() {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      made.push(dir);
      return dir;
    },
    removeAll() {
      for (const dir of made) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The copy-mode containers of `workspace` (only those: other tests' containers are left alone). */
export function copyContainers(workspace: string): Promise<Docker.ContainerInfo[]> {
  return new Docker().listContainers({
    all: true,
    filters: { label: [`${LABEL_WORKSPACE}=copy:${workspace}`] },
  });
}

/** Removes them with their volumes: a killed harness had no chance to. */
export async function removeCopyContainers(workspace: string): Promise<void> {
  const docker = new Docker();
  for (const c of await copyContainers(workspace))
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
}
