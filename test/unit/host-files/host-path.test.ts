import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HostPathError, markSandboxWritable, openHostDir } from "../../../src/host-files/host-path.js";

let root: string;
let ws: string;
let victim: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-hostpath-")));
  ws = join(root, "ws");
  victim = join(root, "victim");
  mkdirSync(ws);
  mkdirSync(victim);
  markSandboxWritable(ws);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function refusal(run: () => unknown): HostPathError {
  try {
    run();
  } catch (error) {
    if (error instanceof HostPathError) return error;
    throw error;
  }
  throw new Error("not refused");
}

describe("openHostDir", () => {
  it("creates missing directories below a workspace and holds the one it opened", () => {
    const dir = openHostDir(join(ws, "a", "b"), 0o700);
    try {
      expect(dir.realPath).toBe(join(ws, "a", "b"));
      renameSync(join(ws, "a"), join(ws, "moved"));
      symlinkSync(victim, join(ws, "a"));
      writeFileSync(dir.at("f"), "x");
      expect(dir.list()).toEqual(["f"]);
      expect(realpathSync(join(ws, "moved", "b", "f"))).toBe(join(ws, "moved", "b", "f"));
    } finally {
      dir.close();
    }
  });

  it("refuses a symlink at the last component or a parent below a workspace", () => {
    symlinkSync(victim, join(ws, "last"));
    expect(refusal(() => openHostDir(join(ws, "last"), 0o700)).message).toBe(
      `not writing ${join(ws, "last")}: ${join(ws, "last")} is a symlink (the sandbox can write there)`,
    );
    mkdirSync(join(victim, "sub"));
    symlinkSync(victim, join(ws, "parent"));
    expect(refusal(() => openHostDir(join(ws, "parent", "sub"))).reason).toMatch(/parent is a symlink/);
    // A relative link that stays inside is refused all the same: below a workspace, none is followed.
    mkdirSync(join(ws, "real"));
    symlinkSync("real", join(ws, "inside"));
    expect(refusal(() => openHostDir(join(ws, "inside"))).reason).toMatch(/inside is a symlink/);
  });

  it("follows the user's links outside every workspace, but walks strictly once one leads into it", () => {
    const mine = join(root, "mine");
    symlinkSync(victim, mine);
    const dir = openHostDir(join(mine), 0o700);
    expect(dir.realPath).toBe(victim);
    dir.close();
    // A user link into the workspace, and below it one the sandbox planted.
    symlinkSync(ws, join(root, "into-ws"));
    symlinkSync(victim, join(ws, "planted"));
    expect(refusal(() => openHostDir(join(root, "into-ws", "planted"), 0o700)).reason).toMatch(
      /ws\/planted is a symlink/,
    );
  });

  it("refuses a file where a directory should be, and a missing one without a mode", () => {
    writeFileSync(join(ws, "file"), "");
    expect(refusal(() => openHostDir(join(ws, "file", "x"), 0o700)).reason).toMatch(/is not a directory$/);
    expect(refusal(() => openHostDir(join(ws, "missing"))).reason).toMatch(/does not exist$/);
  });
});
