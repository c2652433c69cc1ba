import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { egressSocketDir, harnessStateDir } from "../../../src/state/state-dir.js";

describe("harnessStateDir", () => {
  it("uses XDG_STATE_HOME, and ~/.local/state when it is unset or empty", () => {
    expect(harnessStateDir({ XDG_STATE_HOME: "/var/state" })).toBe("/var/state/harness");
    expect(harnessStateDir({ XDG_STATE_HOME: "" })).toBe(join(homedir(), ".local", "state", "harness"));
    expect(harnessStateDir({})).toBe(join(homedir(), ".local", "state", "harness"));
  });
});

describe("egressSocketDir", () => {
  const env = { XDG_STATE_HOME: "/s" };

  it("is the same for the same workspace and isolation on every call (the container mounts it)", () => {
    const dir = egressSocketDir("/home/u/proj", "bind", env);
    expect(dir).toMatch(/^\/s\/harness\/egress\/[0-9a-f]{16}$/);
    expect(egressSocketDir("/home/u/proj", "bind", env)).toBe(dir);
  });

  it("differs between workspaces, and between bind and copy of one workspace", () => {
    const dir = egressSocketDir("/home/u/proj", "bind", env);
    expect(egressSocketDir("/home/u/proj2", "bind", env)).not.toBe(dir);
    expect(egressSocketDir("/home/u/proj", "copy", env)).not.toBe(dir);
  });
});
