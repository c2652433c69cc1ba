import { execFileSync } from "node:child_process";
import {
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../../src/errors.js";
import {
  createIgnoreMatcher,
  DEFAULT_IGNORES,
  loadIgnoreMatcher,
} from "../../../../src/sandbox/copy/ignore-rules.js";

describe("ignore rules", () => {
  it("leaves out only harness's own state by default; .git is copied", () => {
    const ignored = createIgnoreMatcher(DEFAULT_IGNORES);
    expect(ignored(".harness", true)).toBe(true);
    expect(ignored(".harness/runs/x.jsonl", false)).toBe(true);
    expect(ignored("sub/.harness", true)).toBe(false);
    expect(ignored(".git", true)).toBe(false);
    expect(ignored(".git/config", false)).toBe(false);
    expect(ignored("node_modules/.cache/x", false)).toBe(false);
  });

  it("supports the gitignore basics: names anywhere, anchors, directory-only, ** and comments", () => {
    const ignored = createIgnoreMatcher([
      "# comment",
      "",
      "*.log",
      "/dist",
      "build/",
      "docs/**/*.tmp",
      "node_modules/.cache",
      "a?c",
    ]);
    expect(ignored("x.log", false)).toBe(true);
    expect(ignored("deep/er/x.log", false)).toBe(true);
    expect(ignored("dist", true)).toBe(true);
    expect(ignored("sub/dist", true)).toBe(false);
    expect(ignored("build", true)).toBe(true);
    expect(ignored("build", false)).toBe(false);
    expect(ignored("sub/build/out.o", false)).toBe(true);
    expect(ignored("docs/a/b/x.tmp", false)).toBe(true);
    expect(ignored("docs/x.tmp", false)).toBe(true);
    expect(ignored("node_modules/.cache/babel/x", false)).toBe(true);
    expect(ignored("node_modules/left-pad/index.js", false)).toBe(false);
    expect(ignored("abc", false)).toBe(true);
    expect(ignored("a/c", false)).toBe(false);
  });

  it("refuses negated patterns instead of half-supporting them", () => {
    expect(() => createIgnoreMatcher(["!keep.log"])).toThrow(ConfigError);
  });

  it("reads .harnessignore from the workspace, but never through a symlink", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-ignore-")));
    try {
      writeFileSync(join(root, ".harnessignore"), "secret.txt\n");
      expect((await loadIgnoreMatcher(root))("secret.txt", false)).toBe(true);
      rmSync(join(root, ".harnessignore"));
      writeFileSync(join(root, "elsewhere"), "other.txt\n");
      symlinkSync("elsewhere", join(root, ".harnessignore"));
      const ignored = await loadIgnoreMatcher(root);
      expect(ignored("other.txt", false)).toBe(false);
      expect(ignored(".harness", true)).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("does not block on a fifo planted as .harnessignore (copy mode would hang before it starts)", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-ignore-")));
    const fifo = join(root, ".harnessignore");
    execFileSync("mkfifo", [fifo]);
    try {
      const outcome = await Promise.race([
        loadIgnoreMatcher(root).then(() => "returned"),
        // Generous: it returns at once unless open(2) waits for a writer.
        new Promise((resolve) => setTimeout(resolve, 5000, "blocked")),
      ]);
      expect(outcome).toBe("returned");
    } finally {
      // Releases an open(2) that blocked (a writer arrives), so the worker can end.
      try {
        closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {}
      rmSync(root, { recursive: true, force: true });
    }
  });
});
