import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandboxError } from "../../../src/errors.js";
import { readBuildContext } from "../../../src/sandbox/docker/devcontainer/build-context.js";

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "harness-devc-ctx-"));
  mkdirSync(join(root, "ctx", "sub"), { recursive: true });
  writeFileSync(join(root, "ctx", "sub", "a.txt"), "a");
  writeFileSync(join(root, "secret"), "host secret");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("readBuildContext", () => {
  it("packs a symlink as a symlink, never what it points at", () => {
    symlinkSync(join(root, "secret"), join(root, "ctx", "link"));
    writeFileSync(join(root, "ctx", "Dockerfile"), "FROM x\n");
    const context = readBuildContext({
      context: join(root, "ctx"),
      dockerfile: join(root, "ctx", "Dockerfile"),
      args: {},
    });
    expect(context.dockerfile).toBe("Dockerfile");
    expect(context.entries.map((e) => `${e.type} ${e.name}`)).toEqual([
      "file Dockerfile",
      "symlink link",
      "directory sub",
      "file sub/a.txt",
    ]);
    const link = context.entries.find((e) => e.name === "link");
    expect(link).toEqual({ type: "symlink", name: "link", linkname: join(root, "secret") });
    const contents = context.entries.flatMap((e) => (e.type === "file" ? [e.content.toString()] : []));
    expect(contents).not.toContain("host secret");
  });

  it("adds a Dockerfile from outside the context under its own name; the tag follows args", () => {
    writeFileSync(join(root, "Dockerfile"), "FROM y\n");
    const build = { context: join(root, "ctx"), dockerfile: join(root, "Dockerfile"), args: {} };
    const context = readBuildContext(build);
    expect(context.dockerfile).toBe(".harness-devcontainer.Dockerfile");
    expect(context.entries.at(-1)).toMatchObject({ name: context.dockerfile });
    expect(readBuildContext({ ...build, args: { A: "1" } }).hash).not.toBe(context.hash);
  });

  it("stops at its bounds", () => {
    const build = { context: join(root, "ctx"), dockerfile: join(root, "ctx", "sub", "a.txt"), args: {} };
    expect(() => readBuildContext(build, { bytes: 0, entries: 10 })).toThrow(SandboxError);
    expect(() => readBuildContext(build, { bytes: 100, entries: 1 })).toThrow(SandboxError);
  });
});
