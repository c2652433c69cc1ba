/** `harness shell`, `harness ps`, `harness rm` (and `harness rm ID`, a kept copy). */
import { realpath } from "node:fs/promises";
import { type CliFlags, loadSandboxConfig } from "../../config.js";
import { ConfigError } from "../../errors.js";
import { shownAge } from "../../runs/run-table.js";
import {
  listHarnessContainers,
  removeHarnessContainers,
} from "../../sandbox/docker/container/container-registry.js";
import { ensureSandboxImage } from "../../sandbox/docker/container/image.js";
import { connectDocker } from "../../sandbox/docker/engine/docker-client.js";
import { dropKeptCopy, findKeptCopy, listKeptCopies } from "../../sandbox/docker/isolation/kept-copy.js";
import { removePackageCacheVolumes } from "../../sandbox/docker/package-cache/package-cache-volume.js";
import { parseUserIds } from "../../sandbox/sandbox-user.js";
import { readSettings } from "../../settings/read-setting.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import type { Interrupts } from "../session/interrupts.js";
import { processReviewIo, reviewCopyChanges } from "../setup/copy-changes.js";
import { newCopyId, openSandbox } from "../setup/sandbox-from-config.js";
import { engineOf, podsCommand } from "./pods-command.js";

export async function shellCommand(flags: CliFlags, interrupts: Interrupts): Promise<number> {
  // The shell is interactive (a TTY in the sandbox, stdin put in raw mode): without a terminal it
  // would read nothing and end at once with nothing said.
  if (!process.stdin.isTTY) {
    throw new ConfigError(
      "the shell needs a terminal, and stdin is not one: run commands with harness exec -- 'CMD' instead (or start the shell from a terminal; over ssh, ssh -t)",
    );
  }
  await using sandbox = await openSandbox(loadSandboxConfig(process.env, flags), {
    session: interrupts.session,
    keepCopyAs: { id: newCopyId("shell"), command: "shell" },
  });
  // The session's end (SIGHUP when the terminal closes, SIGTERM) closes the shell's connection. A
  // Ctrl-C at the terminal is a key for the shell; a SIGINT sent to harness ends the session too.
  const code = await sandbox.shell({
    stdin: process.stdin,
    stdout: process.stdout,
    signal: interrupts.session.signal,
  });
  await reviewCopyChanges(sandbox, flags.apply, processReviewIo(interrupts.session.signal));
  return code;
}

export async function psCommand(flags: CliFlags = {}): Promise<number> {
  if (engineOf(flags) === "kubernetes") return podsCommand(flags, "ps");
  const docker = await connectDocker();
  const containers = await listHarnessContainers(docker);
  if (containers.length === 0) {
    process.stdout.write("no harness containers\n");
    return 0;
  }
  const rows = [["CONTAINER", "NAME", "STATUS", "IMAGE", "WORKSPACE"]];
  for (const c of containers) rows.push([c.id, c.name, c.status, c.image, c.workspace]);
  writeTable(rows);
  // The sandbox's work that never landed: what it is and what to do with it.
  const kept = (await listKeptCopies(docker)).filter((c) => !c.inUse);
  if (kept.length > 0) {
    process.stdout.write("\nkept copies (the sandbox's changes, not applied):\n");
    const now = Date.now();
    const keptRows = [["KEPT COPY", "WORKSPACE", "AGE", "TO LAND / TO DROP"]];
    for (const c of kept) {
      const age = shownAge(now - c.created.getTime());
      keptRows.push([c.id, c.workspace, age, `harness apply ${c.id} / harness rm ${c.id}`]);
    }
    writeTable(keptRows);
  }
  return 0;
}

/** Columns padded to their widest cell. */
function writeTable(rows: string[][]): void {
  // Names, ids and workspace paths are labels any engine user can set: shown, never obeyed.
  const cells = rows.map((row) => row.map((text) => sanitizeForTerminal(text, { oneLine: true })));
  const widths = cells[0]?.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length))) ?? [];
  for (const row of cells) {
    process.stdout.write(
      `${row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join("  ")}\n`,
    );
  }
}

export async function rmCommand(
  flags: CliFlags & { all?: boolean; cache?: boolean },
  id?: string,
): Promise<number> {
  if (id !== undefined && (flags.all || flags.cache || flags.workspace !== undefined))
    throw new ConfigError("harness rm ID takes no --all, --cache or --workspace: it drops that kept copy");
  if (id !== undefined && engineOf(flags) === "kubernetes")
    throw new ConfigError("kept copies are Docker's: a pod's copy is reset by its next session");
  if (engineOf(flags) === "kubernetes") return podsCommand(flags, "rm");
  const docker = await connectDocker();
  if (id !== undefined) return dropKeptCopyCommand(docker, id);
  if (flags.cache) {
    const uid = flags.user === undefined ? undefined : parseUserIds(flags.user).uid;
    if (uid !== undefined && !Number.isSafeInteger(uid))
      throw new ConfigError(`--user must be a uid, got '${flags.user}'`);
    // --workspace given: only that workspace's cache (every user's for it, unless --user).
    const workspace =
      flags.workspace === undefined
        ? undefined
        : await realpath(flags.workspace).catch(() => {
            throw new ConfigError(`workspace '${flags.workspace}' does not exist`);
          });
    const removed = await removePackageCacheVolumes(docker, { uid, workspace });
    for (const name of removed) process.stdout.write(`removed volume ${name}\n`);
    if (removed.length === 0) process.stdout.write("no package cache to remove\n");
    return 0;
  }
  let workspace: string | undefined;
  if (!flags.all) {
    const given = readSettings(flags, process.env).text("workspace") ?? process.cwd();
    workspace = await realpath(given).catch(() => {
      throw new ConfigError(
        `workspace '${given}' does not exist (use --all to remove every harness container)`,
      );
    });
  }
  // A kept copy holds the sandbox's work that never landed: only `harness rm ID` drops it.
  const kept = (await listKeptCopies(docker)).filter((c) => !c.inUse);
  const keptIds = new Set(kept.map((c) => c.containerId.slice(0, 12)));
  const found = await listHarnessContainers(docker, workspace);
  const removed = await removeHarnessContainers(
    docker,
    found.filter((c) => !keptIds.has(c.id)),
  );
  for (const c of removed)
    process.stdout.write(
      `${sanitizeForTerminal(`removed ${c.id} ${c.name} (${c.workspace})`, { oneLine: true })}\n`,
    );
  if (removed.length === 0) process.stdout.write("nothing to remove\n");
  for (const c of kept.filter((k) => found.some((f) => f.id === k.containerId.slice(0, 12)))) {
    process.stdout.write(
      `${sanitizeForTerminal(`left the kept copy ${c.id} (${c.workspace}): harness apply ${c.id} lands it, harness rm ${c.id} drops it`, { oneLine: true })}\n`,
    );
  }
  return 0;
}

/** `harness rm ID`: drops a kept copy, the sandbox's changes with it. */
async function dropKeptCopyCommand(
  docker: Awaited<ReturnType<typeof connectDocker>>,
  id: string,
): Promise<number> {
  const kept = await findKeptCopy(docker, id);
  if (kept.inUse) {
    throw new ConfigError(
      `the copy ${kept.id} belongs to a harness session that is still running (or one on another machine): end that session first`,
    );
  }
  await dropKeptCopy(docker, kept);
  process.stdout.write(
    `${sanitizeForTerminal(`removed the kept copy ${kept.id} (${kept.workspace}): its changes are dropped`, { oneLine: true })}\n`,
  );
  return 0;
}

export async function imageCommand(): Promise<number> {
  const tag = await ensureSandboxImage(await connectDocker(), (line) =>
    process.stderr.write(`${sanitizeForTerminal(line, { oneLine: true })}\n`),
  );
  process.stdout.write(`${tag}\n`);
  return 0;
}
