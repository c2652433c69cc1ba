/**
 * A disk that fills mid-run (issue 32, issue 34): checkpoints that no longer fit stop with one line
 * naming the path and the run goes on; a transcript that no longer fits ends the run with one line
 * naming the path and exit code 1, what it holds already parses whole, and the workspace is as the
 * run found it. The disk is a small tmpfs the test mounts itself (it runs as root in CI): a mount
 * that fails fails the test.
 */
import { execFileSync } from "node:child_process";
import { chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreWriteError } from "../../src/checkpoints/blob-store.js";
import { appendStep, readSteps } from "../../src/checkpoints/step-log.js";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

let scratch: string;
const mounted: string[] = [];

/** A fresh tmpfs of `size` under the scratch directory. */
function smallDisk(name: string, size: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir);
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir]);
  mounted.push(dir);
  return dir;
}

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "harness-fault-disk-"));
});
afterAll(() => {
  for (const dir of mounted) execFileSync("umount", [dir]);
  rmSync(scratch, { recursive: true, force: true });
});

/** Every file under `dir`, relative, with its content. */
function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true, encoding: "utf8" }).sort()) {
    try {
      out[name] = readFileSync(join(dir, name), "utf8");
    } catch {
      out[name] = "(directory)";
    }
  }
  return out;
}

/** stderr's lines that contain `text`. */
function linesWith(stderr: string, text: string): string[] {
  return stderr.split("\n").filter((line) => line.includes(text));
}

describe("a steps.jsonl line that does not fit", () => {
  it("is cut back, so the lines before it stand and a later line follows them whole", () => {
    const dir = join(smallDisk("steps", "8k"), "run.checkpoints");
    const step = (n: number, paths: number) => ({
      step: n,
      time: new Date(0).toISOString(),
      delta: Object.fromEntries(
        Array.from({ length: paths }, (_, i) => [
          `dir/file-${i}`,
          { type: "directory" as const, mode: 0o755, size: 0, mtimeMs: 0, ctimeMs: 0, ino: i },
        ]),
      ),
      counts: { added: paths, changed: 0, removed: 0 },
    });
    appendStep(dir, step(0, 1));
    // About 40 KB: part of it fits in the 8 KiB disk, then ENOSPC.
    expect(() => appendStep(dir, step(1, 1000))).toThrow(StoreWriteError);
    expect(() => appendStep(dir, step(1, 1000))).toThrow(/steps\.jsonl could not be written \(ENOSPC\)/);
    appendStep(dir, step(1, 1));
    expect(readSteps(dir).map((record) => record.step)).toEqual([0, 1]);
    expect(readFileSync(join(dir, "steps.jsonl"), "utf8").split("\n")).toHaveLength(3);
  });
});

describe.skipIf(skipDocker)("a full disk", () => {
  const fake = useFakeApi();

  it("stops the checkpoints with one line naming the path, and the run goes on", async () => {
    using ws = makeWorkspace();
    // Larger than the state directory's disk: the first checkpoint cannot store it.
    writeFileSync(join(ws.path, "big.bin"), Buffer.alloc(512 * 1024, 7));
    chownSync(join(ws.path, "big.bin"), TEST_UID, TEST_GID);
    const stateHome = smallDisk("state", "256k");
    const env = { ...fake.env, XDG_STATE_HOME: stateHome };
    try {
      fake.api.enqueue(toolUseReply("bash", { command: "echo made > made.txt" }, "Making it."));
      fake.api.enqueue(textReply("Done."));
      // The transcript and the checkpoints share the state directory's disk: the checkpoint is what
      // does not fit, and what it began is removed again, so the transcript goes on.
      const run = await runCli(["run", "--workspace", ws.path, "make it"], { env });

      expect(run.code, run.stderr).toBe(0);
      // A notice, as every notice of the run: in the run's output (stdout for text) and the transcript.
      const stopped = linesWith(run.stdout + run.stderr, "checkpoints stopped");
      expect(stopped, run.stdout + run.stderr).toHaveLength(1);
      expect(stopped[0]).toMatch(/checkpoints stopped at step 0: .*could not be written \(ENOSPC\)/);
      expect(stopped[0]).toContain(stateHome);
      // The run went on: the command ran and the model's end was recorded.
      expect(readFileSync(join(ws.path, "made.txt"), "utf8")).toBe("made\n");
      const transcript = /harness: transcript: (.*)/.exec(run.stderr)?.[1] ?? "";
      expect(transcript.startsWith(stateHome), run.stderr).toBe(true);
      const records = readFileSync(transcript, "utf8")
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line) as { type: string; status?: string });
      expect(records.at(-1)).toMatchObject({ type: "run_end", status: "submitted" });
      // Nothing half-written is left in the store.
      const leftovers = readdirSync(stateHome, { recursive: true, encoding: "utf8" }).filter((name) =>
        /(^|\/)tmp-/.test(name),
      );
      expect(leftovers).toEqual([]);
    } finally {
      await removeWorkspaceContainers(ws.path);
    }
  });

  it("ends the run when the transcript no longer fits: one line, exit 1, the transcript whole, the workspace untouched", async () => {
    using ws = makeWorkspace();
    writeFileSync(join(ws.path, "a.txt"), "before\n");
    chownSync(join(ws.path, "a.txt"), TEST_UID, TEST_GID);
    const before = contents(ws.path);
    const stateHome = smallDisk("transcript", "64k");
    const env = { ...fake.env, XDG_STATE_HOME: stateHome };
    try {
      // The assistant's record is larger than the disk: it is the write that fails, before its call runs.
      fake.api.enqueue(toolUseReply("bash", { command: "echo after > a.txt" }, "x".repeat(200 * 1024)));
      fake.api.enqueue(textReply("Done."));
      const run = await runCli(["run", "--workspace", ws.path, "change it"], { env });
      const transcript = /harness: transcript: (.*)/.exec(run.stderr)?.[1] ?? "";
      expect(transcript.startsWith(stateHome), run.stderr).toBe(true);

      expect(run.code, run.stderr).toBe(1);
      const said = linesWith(run.stderr, "could not be written");
      expect(said, run.stderr).toHaveLength(1);
      expect(said[0]).toContain(`${transcript} could not be written (ENOSPC)`);
      // What was written before the failure parses whole: no torn last line.
      const text = readFileSync(transcript, "utf8");
      expect(text.endsWith("\n")).toBe(true);
      const types = text
        .trimEnd()
        .split("\n")
        .map((line) => (JSON.parse(line) as { type: string }).type);
      expect(types.slice(0, 2)).toEqual(["run_start", "user"]);
      expect(types).not.toContain("tool_result");
      expect(contents(ws.path)).toEqual(before);
      // The run never ended: listed as interrupted, so `--resume` can take it up once there is room.
      const listed = await runCli(["runs", "--output-format", "json"], { env });
      expect(JSON.parse(listed.stdout), listed.stderr).toMatchObject([{ status: "interrupted" }]);
    } finally {
      await removeWorkspaceContainers(ws.path);
    }
  });

  it("ends a batch whose results file no longer fits: one line, exit 1, only whole lines in it", async () => {
    using ws = makeWorkspace();
    const disk = smallDisk("results", "4k");
    const results = join(disk, "tasks.results.jsonl");
    const tasks = join(scratch, "tasks.jsonl");
    writeFileSync(tasks, `${JSON.stringify({ id: "one", workspace: ws.path, task: "answer" })}\n`);
    const env = { ...fake.env, XDG_STATE_HOME: join(scratch, "state-c") };
    try {
      // The result line carries the final text: larger than the disk.
      fake.api.enqueue(textReply("y".repeat(20 * 1024)));
      const run = await runCli(
        ["batch", tasks, "--results", results, "--transcripts", join(scratch, "batch-transcripts")],
        { env },
      );

      expect(run.code, run.stderr).toBe(1);
      const said = linesWith(run.stderr, "could not be written");
      expect(said, run.stderr).toHaveLength(1);
      expect(said[0]).toContain(`${results} could not be written (ENOSPC)`);
      // Nothing half-written: the task is recorded whole or not at all, so the next batch runs it again.
      expect(readFileSync(results, "utf8")).toBe("");
    } finally {
      await removeWorkspaceContainers(ws.path);
    }
  });

  it("ends a batch whose task transcript no longer fits: one line naming it, exit 1, the task to run again", async () => {
    using ws = makeWorkspace();
    writeFileSync(join(ws.path, "a.txt"), "before\n");
    chownSync(join(ws.path, "a.txt"), TEST_UID, TEST_GID);
    const before = contents(ws.path);
    const transcripts = smallDisk("task-transcripts", "64k");
    const results = join(scratch, "task-transcript.results.jsonl");
    const tasks = join(scratch, "task-transcript.tasks.jsonl");
    writeFileSync(tasks, `${JSON.stringify({ id: "one", workspace: ws.path, task: "change it" })}\n`);
    const env = { ...fake.env, XDG_STATE_HOME: join(scratch, "state-d") };
    try {
      // The assistant's record is larger than the disk: the task's transcript cannot take it.
      fake.api.enqueue(toolUseReply("bash", { command: "echo after > a.txt" }, "x".repeat(200 * 1024)));
      fake.api.enqueue(textReply("Done."));
      const run = await runCli(["batch", tasks, "--results", results, "--transcripts", transcripts], { env });

      expect(run.code, run.stderr).toBe(1);
      const said = linesWith(run.stderr, "could not be written");
      expect(said, run.stderr).toHaveLength(1);
      expect(said[0]).toContain(`${join(transcripts, "one")}`);
      expect(said[0]).toContain("(ENOSPC)");
      // The command was never run, and the task is recorded as canceled: the next batch runs it again.
      expect(contents(ws.path)).toEqual(before);
      const recorded = readFileSync(results, "utf8")
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line) as { task_id: string; status: string });
      expect(recorded.map(({ task_id, status }) => ({ task_id, status }))).toEqual([
        { task_id: "one", status: "canceled" },
      ]);
    } finally {
      await removeWorkspaceContainers(ws.path);
    }
  });

  it("refuses a copy-mode apply that does not fit: one line naming the path, the workspace as it was", async () => {
    // The workspace itself lies on the small disk: the apply's staging (beside it) is what fills it.
    const disk = smallDisk("apply", "1m");
    const workspace = join(disk, "proj");
    mkdirSync(workspace);
    writeFileSync(join(workspace, "a.txt"), "before\n");
    for (const path of [disk, workspace, join(workspace, "a.txt")]) chownSync(path, TEST_UID, TEST_GID);
    const before = contents(workspace);
    const env = { XDG_STATE_HOME: join(scratch, "state-apply") };
    try {
      const run = await runCli(
        [
          "exec",
          "--isolation",
          "copy",
          "--apply",
          "-w",
          workspace,
          "--",
          "echo after > a.txt; echo new > small.txt; head -c 3000000 /dev/zero > big.bin",
        ],
        { env },
      );
      expect(run.code, run.stderr).toBe(1);
      const said = linesWith(run.stderr, "ENOSPC");
      expect(said, run.stderr).toHaveLength(1);
      expect(said[0]).toContain(workspace);
      // All or nothing: not the rewrite, not the small new file, and no staging left behind.
      expect(contents(workspace)).toEqual(before);
    } finally {
      await removeWorkspaceContainers(workspace);
    }
  });
});
