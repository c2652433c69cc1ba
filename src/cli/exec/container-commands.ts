/** `harness shell`, `harness ps`, `harness rm`. */
import { realpath } from "node:fs/promises";
import { type CliFlags, loadSandboxConfig } from "../../config.js";
import { ConfigError } from "../../errors.js";
import {
  listHarnessContainers,
  removeHarnessContainers,
} from "../../sandbox/docker/container/container-registry.js";
import { ensureSandboxImage } from "../../sandbox/docker/container/image.js";
import { connectDocker } from "../../sandbox/docker/engine/docker-client.js";
import { removePackageCacheVolumes } from "../../sandbox/docker/package-cache/package-cache-volume.js";
import { parseUserIds } from "../../sandbox/sandbox-user.js";
import { readSettings } from "../../settings/read-setting.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import type { Interrupts } from "../session/interrupts.js";
import { processReviewIo, reviewCopyChanges } from "../setup/copy-changes.js";
import { openSandbox } from "../setup/sandbox-from-config.js";
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
  const containers = await listHarnessContainers(await connectDocker());
  if (containers.length === 0) {
    process.stdout.write("no harness containers\n");
    return 0;
  }
  const rows = [["CONTAINER", "NAME", "STATUS", "IMAGE", "WORKSPACE"]];
  // Names and workspace paths are labels any engine user can set: shown, never obeyed.
  const cell = (text: string) => sanitizeForTerminal(text, { oneLine: true });
  for (const c of containers) rows.push([c.id, c.name, c.status, c.image, c.workspace].map(cell));
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  for (const row of rows) {
    process.stdout.write(
      `${row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join("  ")}\n`,
    );
  }
  return 0;
}

export async function rmCommand(flags: CliFlags & { all?: boolean; cache?: boolean }): Promise<number> {
  if (engineOf(flags) === "kubernetes") return podsCommand(flags, "rm");
  const docker = await connectDocker();
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
  const removed = await removeHarnessContainers(docker, await listHarnessContainers(docker, workspace));
  for (const c of removed)
    process.stdout.write(
      `${sanitizeForTerminal(`removed ${c.id} ${c.name} (${c.workspace})`, { oneLine: true })}\n`,
    );
  if (removed.length === 0) process.stdout.write("nothing to remove\n");
  return 0;
}

export async function imageCommand(): Promise<number> {
  const tag = await ensureSandboxImage(await connectDocker(), (line) =>
    process.stderr.write(`${sanitizeForTerminal(line, { oneLine: true })}\n`),
  );
  process.stdout.write(`${tag}\n`);
  return 0;
}
