import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import { DEFAULT_SNAPSHOT_LIMITS, type Manifest } from "../../../src/checkpoints/checkpoint-types.js";
import { parseIgnoreFile } from "../../../src/checkpoints/git-ignore.js";
import { MAX_IGNORE_FILE_BYTES } from "../../../src/checkpoints/ignore-sources.js";
import { type Snapshot, takeSnapshot } from "../../../src/checkpoints/snapshot.js";
import { appendStep, notCheckpointedAt, readSteps } from "../../../src/checkpoints/step-log.js";
import { checkpointDirs } from "./checkpoints-fixture.js";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function workspace(files: Record<string, string>) {
  const d = checkpointDirs();
  made.push(d.base);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(d.root, path, ".."), { recursive: true });
    writeFileSync(join(d.root, path), content);
  }
  return d;
}

async function snapshot(
  d: ReturnType<typeof workspace>,
  gitIgnore: { global?: string } | "all" = {},
  previous: Manifest = new Map(),
): Promise<Snapshot> {
  return takeSnapshot({
    root: d.root,
    previous,
    store: new BlobStore(d.shared, join(d.run, "blobs")),
    limits: DEFAULT_SNAPSHOT_LIMITS,
    ...(gitIgnore === "all"
      ? {}
      : {
          gitIgnore: {
            global:
              gitIgnore.global === undefined ? undefined : parseIgnoreFile(Buffer.from(gitIgnore.global), ""),
          },
        }),
  });
}

const paths = (s: Snapshot) => [...(s.manifest?.keys() ?? [])].sort();

describe("checkpoints leave out what git ignores", () => {
  it("does not enter an ignored node_modules, names it once, and keeps everything with --checkpoints all", async () => {
    const d = workspace({
      ".gitignore": "node_modules/\n*.log\n",
      "src/a.js": "a",
      "src/debug.log": "x",
      "node_modules/p/index.js": "p",
      "node_modules/q/index.js": "q",
    });
    const s = await snapshot(d);
    expect(paths(s)).toEqual([".gitignore", "src", "src/a.js"]);
    expect(s.ignored).toEqual({ paths: ["node_modules", "src/debug.log"] });
    // The .gitignore and src/a.js: nothing under node_modules is read.
    expect(s.bytesRead).toBe("node_modules/\n*.log\n".length + 1);

    const all = await snapshot(d, "all");
    expect(paths(all)).toContain("node_modules/q/index.js");
    expect(all.ignored).toBeUndefined();
  });

  it("applies nested .gitignore files, negation, .git/info/exclude, global excludes and .harnessignore", async () => {
    const d = workspace({
      ".gitignore": "*.gen\n",
      "sub/.gitignore": "!keep.gen\n",
      "sub/x.gen": "",
      "sub/keep.gen": "",
      "top.gen": "",
      ".git/info/exclude": "private/\n",
      "private/secret": "",
      "global.tmp": "",
      ".harnessignore": "big/\n",
      "big/blob": "",
      ".git/HEAD": "ref: refs/heads/main\n",
    });
    const s = await snapshot(d, { global: "*.tmp\n" });
    expect(s.ignored?.paths.sort()).toEqual(["big", "global.tmp", "private", "sub/x.gen", "top.gen"]);
    expect(paths(s)).toContain("sub/keep.gen");
    expect(paths(s)).toContain(".git/HEAD");
  });

  it("never leaves out .git itself, whatever a .gitignore says", async () => {
    const d = workspace({
      ".gitignore": "*\n!.gitignore\n",
      ".git/HEAD": "x",
      ".git/x/.gitignore": "*",
      a: "",
    });
    const s = await snapshot(d);
    expect(paths(s)).toEqual([".git", ".git/HEAD", ".git/x", ".git/x/.gitignore", ".gitignore"]);
    expect(s.ignored?.paths).toEqual(["a"]);
  });

  it("does not follow a symlinked .gitignore (git does not either)", async () => {
    const d = workspace({ "elsewhere/rules": "*.js\n", "a.js": "" });
    symlinkSync(join(d.root, "elsewhere/rules"), join(d.root, ".gitignore"));
    const s = await snapshot(d);
    expect(paths(s)).toContain("a.js");
    expect(s.ignored).toEqual({ paths: [] });
  });

  it("a .gitignore that is a fifo or a directory is not read (nor waited on)", async () => {
    const d = workspace({ "a.js": "", "sub/b.js": "" });
    execFileSync("mkfifo", [join(d.root, ".gitignore")]);
    mkdirSync(join(d.root, "sub", ".gitignore"));
    const s = await snapshot(d);
    expect(paths(s)).toEqual(expect.arrayContaining(["a.js", "sub/b.js", "sub/.gitignore"]));
    expect(s.ignored).toEqual({ paths: [] });
  });

  it("does not apply a .gitignore over the size limit, and says so", async () => {
    const d = workspace({
      ".gitignore": `${"# padding\n".repeat(MAX_IGNORE_FILE_BYTES / 10)}*.js\n`,
      "a.js": "",
    });
    const s = await snapshot(d);
    expect(paths(s)).toContain("a.js");
    expect(s.skipped).toEqual([{ path: ".gitignore", reason: expect.stringContaining("not applied") }]);
  });

  it("names with a newline are matched and named as they are", async () => {
    const d = workspace({ ".gitignore": "*.o\n", "two\nlines.o": "", "two\nlines.c": "" });
    const s = await snapshot(d);
    expect(s.ignored?.paths).toEqual(["two\nlines.o"]);
    expect(paths(s)).toContain("two\nlines.c");
  });

  it("a path the sandbox newly ignores drops out of the next checkpoint and is named there", async () => {
    const d = workspace({ "a.txt": "a", "b.txt": "b" });
    const first = await snapshot(d);
    writeFileSync(join(d.root, ".gitignore"), "b.txt\n");
    const second = await snapshot(d, {}, first.manifest);
    expect(second.delta["b.txt"]).toBeNull();
    expect(second.ignored?.paths).toEqual(["b.txt"]);
  });
});

describe("what each step did not checkpoint", () => {
  it("is the last list named at or before the step's last line; a bad list makes steps.jsonl unreadable", () => {
    const d = workspace({});
    const line = (step: number, notCheckpointed?: { paths: string[] }) =>
      appendStep(d.run, {
        step,
        time: "",
        delta: {},
        counts: { added: 0, changed: 0, removed: 0 },
        ...(notCheckpointed === undefined ? {} : { notCheckpointed }),
      });
    line(0);
    line(1, { paths: ["node_modules"] });
    line(2);
    line(3, { paths: [] });
    const records = readSteps(d.run);
    expect(notCheckpointedAt(records, 0)).toEqual({ paths: [] });
    expect(notCheckpointedAt(records, 2)).toEqual({ paths: ["node_modules"] });
    expect(notCheckpointedAt(records, 3)).toEqual({ paths: [] });
    appendFileSync(
      join(d.run, "steps.jsonl"),
      '{"step":4,"time":"","delta":{},"counts":{},"notCheckpointed":{"paths":[1]}}\n',
    );
    expect(() => readSteps(d.run)).toThrow(/notCheckpointed/);
  });
});
