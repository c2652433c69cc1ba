import { chownSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../src/errors.js";
import { LABEL_WORKSPACE } from "../../../src/sandbox/docker/container/labels.js";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { copyOf } from "../../support/copied.js";
import { skipDocker } from "../../support/docker-available.js";
import { runCli } from "../../support/run-cli.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../../support/workspace.js";

/**
 * Copy mode bounds entries, not only bytes: a task that creates hundreds of thousands of empty
 * files costs no bytes, yet once took the host minutes and hundreds of MB to read back. Over
 * `--copy-max-files`, reading stops with one line of error, the container goes, and the workspace
 * is left as it was. Checked from the host: the CLI's output and exit code, the engine's containers
 * and events, the workspace's files.
 */

const LIMIT = 1000;
const MADE = 5000;

/** Every path under `dir`, sorted: what "the workspace is untouched" is checked against. */
function listing(dir: string, rel = ""): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true })
    .flatMap((d) => {
      const path = rel === "" ? d.name : `${rel}/${d.name}`;
      return d.isDirectory() ? [`${path}/`, ...listing(dir, path)] : [path];
    })
    .sort();
}

async function copyContainersOf(workspace: string): Promise<Docker.ContainerInfo[]> {
  return new Docker().listContainers({
    all: true,
    filters: { label: [`${LABEL_WORKSPACE}=copy:${workspace}`] },
  });
}

async function containerExists(id: string): Promise<boolean> {
  return new Docker()
    .getContainer(id)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

const OVER_COUNT = new RegExp(`more than ${LIMIT} files, directories and symlinks, over --copy-max-files`);
const OVER_CHARS = new RegExp(`paths of more than ${LIMIT * 512} characters in all .*--copy-max-files`);
/** 12 names of 250 characters: a 3,000-character directory path, held for every entry below it. */
const DEEP = Array.from({ length: 12 }, () => "d".repeat(250)).join("/");

/** The task's ways to make many entries cheaply: each is one tar header in the engine's archive. */
const VARIANTS: [string, string, RegExp][] = [
  ["empty files", `mkdir many && cd many && seq 1 ${MADE} | xargs touch`, OVER_COUNT],
  ["directories", `mkdir many && cd many && seq 1 ${MADE} | xargs mkdir`, OVER_COUNT],
  [
    "symlinks",
    `mkdir many && python3 -c 'import os\nfor i in range(${MADE}): os.symlink("/etc/passwd", f"many/l{i}")'`,
    OVER_COUNT,
  ],
  [
    "hard links of one file",
    `mkdir many && touch many/f && python3 -c 'import os\nfor i in range(${MADE}): os.link("many/f", f"many/h{i}")'`,
    OVER_COUNT,
  ],
  [
    "files spread over nested directories",
    `for d in $(seq 1 50); do mkdir -p a/$d/b && (cd a/$d/b && seq 1 100 | xargs touch); done`,
    OVER_COUNT,
  ],
  // Fewer entries than the limit, but each one's path is 3,000 characters long.
  ["long paths", `mkdir -p ${DEEP} && cd ${DEEP} && seq 1 300 | xargs touch`, OVER_CHARS],
];

describe.skipIf(skipDocker)("adversarial: copy mode with more entries than --copy-max-files", () => {
  it.each(VARIANTS)(
    "%s: reading back ends with a SandboxError and the container goes",
    async (_, make, why) => {
      using ws = makeWorkspace();
      writeFileSync(join(ws.path, "README"), "kept\n");
      if (process.getuid?.() === 0) chownSync(join(ws.path, "README"), TEST_UID, TEST_GID);
      const before = listing(ws.path);
      const sandbox = await DockerSandbox.open({
        workspace: ws.path,
        isolation: "copy",
        copyMaxFiles: LIMIT,
        killGraceSeconds: 1,
      });
      const id = sandbox.containerId;
      try {
        const made = await sandbox.exec(`${make} && echo made`, { timeoutMs: 120_000 });
        expect(made.stdout).toBe("made\n");
        const exported = copyOf(sandbox).exportChanges();
        await expect(exported).rejects.toThrow(SandboxError);
        await expect(exported).rejects.toThrow(why);
      } finally {
        await sandbox.stop();
      }
      expect(await containerExists(id)).toBe(false);
      expect(listing(ws.path)).toEqual(before);
    },
  );

  it("harness exec --apply says so in one line, exits 1, applies nothing and leaves no container", async () => {
    using ws = makeWorkspace();
    writeFileSync(join(ws.path, "README"), "kept\n");
    if (process.getuid?.() === 0) chownSync(join(ws.path, "README"), TEST_UID, TEST_GID);
    const before = listing(ws.path);
    const run = await runCli(
      [
        "exec",
        "--isolation",
        "copy",
        "--copy-max-files",
        String(LIMIT),
        "--apply",
        "-w",
        ws.path,
        "--",
        `mkdir many && cd many && seq 1 ${MADE} | xargs touch; echo made`,
      ],
      { timeoutMs: 120_000 },
    );
    expect(run.stdout).toBe("made\n");
    expect(run.stderr.split("\n").filter((line) => /copy-max-files/.test(line))).toEqual([
      expect.stringMatching(
        /^harness: the sandbox's workspace holds more than 1000 files, directories and symlinks/,
      ),
    ]);
    expect(run.stderr).not.toMatch(/^\s+at /m);
    expect(run.stderr).not.toMatch(/^A many/m);
    expect(run.code).toBe(1);
    expect(await copyContainersOf(ws.path)).toEqual([]);
    expect(listing(ws.path)).toEqual(before);
  });

  it("a workspace with more entries than the limit is refused before any container is created", async () => {
    using ws = makeWorkspace();
    mkdirSync(join(ws.path, "many"));
    for (let i = 0; i < LIMIT + 500; i++) writeFileSync(join(ws.path, "many", `f${i}`), "");
    const before = listing(ws.path);
    const since = Math.floor(Date.now() / 1000) - 1;
    const run = await runCli(
      ["exec", "--isolation", "copy", "--copy-max-files", String(LIMIT), "-w", ws.path, "--", "echo ran"],
      { timeoutMs: 120_000 },
    );
    expect(run.stdout).toBe("");
    expect(
      run.stderr.split("\n").filter((line) => line !== "" && !/^harness: (building|pulling)/.test(line)),
    ).toEqual([
      `harness: workspace '${ws.path}' holds more than ${LIMIT} files, directories and symlinks to copy: raise --copy-max-files or leave paths out with .harnessignore`,
    ]);
    expect(run.code).toBe(2);
    // Not one container was created for this workspace's copy, not even briefly.
    const events = await new Docker().getEvents({
      since,
      until: Math.floor(Date.now() / 1000) + 1,
      filters: { type: ["container"], event: ["create"], label: [`${LABEL_WORKSPACE}=copy:${ws.path}`] },
    });
    const text = await new Promise<string>((resolve, reject) => {
      let out = "";
      events.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      events.on("end", () => resolve(out));
      events.on("error", reject);
    });
    expect(text).toBe("");
    expect(listing(ws.path)).toEqual(before);
  });

  it("a workspace with exactly the limit is copied", async () => {
    using ws = makeWorkspace();
    mkdirSync(join(ws.path, "many"));
    for (let i = 0; i < LIMIT - 1; i++) writeFileSync(join(ws.path, "many", `f${i}`), "");
    if (process.getuid?.() === 0) {
      chownSync(join(ws.path, "many"), TEST_UID, TEST_GID);
    }
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      isolation: "copy",
      copyMaxFiles: LIMIT,
      removeOnStop: true,
    });
    expect((await sandbox.exec("ls many | wc -l")).stdout.trim()).toBe(String(LIMIT - 1));
    expect((await copyOf(sandbox).exportChanges()).changes).toEqual([]);
  });
});
