import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  linkSync,
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
import { ConfigError, SandboxError } from "../../../src/errors.js";
import {
  type BuildContext,
  readBuildContext,
} from "../../../src/sandbox/docker/devcontainer/build-context.js";

const asRoot = process.getuid?.() === 0;
/** The workspace owner as harness sees it: the test's own ids (or 1000 when the test is root). */
const OWNER = asRoot ? "1000:1000" : `${process.getuid?.()}:${process.getgid?.()}`;

let root: string;
let ws: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-devc-ctx-")));
  ws = join(root, "ws");
  mkdirSync(join(ws, "ctx", "sub"), { recursive: true });
  writeFileSync(join(ws, "ctx", "sub", "a.txt"), "a");
  writeFileSync(join(root, "secret"), "host secret");
  chmodSync(join(root, "secret"), 0o600);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function build(context = join(ws, "ctx"), dockerfile = join(ws, "ctx", "Dockerfile"), args = {}) {
  return { workspace: ws, context, dockerfile, args };
}

function contents(context: BuildContext): string[] {
  return context.entries.flatMap((e) => (e.type === "file" ? [e.content.toString()] : []));
}

describe("readBuildContext", () => {
  it("packs a symlink as a symlink, never what it points at", async () => {
    symlinkSync(join(root, "secret"), join(ws, "ctx", "link"));
    writeFileSync(join(ws, "ctx", "Dockerfile"), "FROM x\n");
    const context = readBuildContext(build(), OWNER);
    expect(context.dockerfile).toBe("Dockerfile");
    expect(context.dockerfileContent.toString()).toBe("FROM x\n");
    expect(context.entries.map((e) => `${e.type} ${e.name}`)).toEqual([
      "file Dockerfile",
      "symlink link",
      "directory sub",
      "file sub/a.txt",
    ]);
    const link = context.entries.find((e) => e.name === "link");
    expect(link).toEqual({ type: "symlink", name: "link", linkname: join(root, "secret") });
    expect(contents(context)).not.toContain("host secret");
  });

  it("adds a Dockerfile from outside the context under its own name; the tag follows args", async () => {
    writeFileSync(join(ws, "Dockerfile"), "FROM y\n");
    const outside = build(join(ws, "ctx"), join(ws, "Dockerfile"));
    const context = readBuildContext(outside, OWNER);
    expect(context.dockerfile).toBe(".harness-devcontainer.Dockerfile");
    expect(context.entries.at(-1)).toMatchObject({ name: context.dockerfile });
    expect(context.dockerfileContent.toString()).toBe("FROM y\n");
    expect(readBuildContext({ ...outside, args: { A: "1" } }, OWNER).hash).not.toBe(context.hash);
  });

  it("stops at its bounds", async () => {
    const small = build(join(ws, "ctx"), join(ws, "ctx", "sub", "a.txt"));
    expect(() => readBuildContext(small, OWNER, { bytes: 0, entries: 10 })).toThrow(SandboxError);
    expect(() => readBuildContext(small, OWNER, { bytes: 100, entries: 1 })).toThrow(SandboxError);
  });

  // Each of these was checked (realpath inside the workspace) when devcontainer.json was read, then
  // swapped for a link to the host before the build read it: never followed.
  it("refuses a context folder swapped for a symlink after the check", async () => {
    writeFileSync(join(ws, "ctx", "Dockerfile"), "FROM x\n");
    const checked = build();
    rmSync(join(ws, "ctx"), { recursive: true });
    symlinkSync(root, join(ws, "ctx"));
    expect(() => readBuildContext(checked, OWNER)).toThrow(
      /build\.context .*ctx: ctx is a symlink now.*not followed/,
    );
  });

  it("refuses a parent of the context swapped for a symlink", async () => {
    mkdirSync(join(ws, "a", "ctx"), { recursive: true });
    writeFileSync(join(ws, "a", "ctx", "Dockerfile"), "FROM x\n");
    const checked = build(join(ws, "a", "ctx"), join(ws, "a", "ctx", "Dockerfile"));
    mkdirSync(join(root, "elsewhere", "ctx"), { recursive: true });
    writeFileSync(join(root, "elsewhere", "ctx", "Dockerfile"), "FROM host\n");
    writeFileSync(join(root, "elsewhere", "ctx", "secret"), "host secret");
    renameSync(join(ws, "a"), join(ws, "a.old"));
    symlinkSync(join(root, "elsewhere"), join(ws, "a"));
    expect(() => readBuildContext(checked, OWNER)).toThrow(/a is a symlink now/);
  });

  it("refuses a Dockerfile outside the context swapped for a symlink, or its folder", async () => {
    mkdirSync(join(ws, "df"));
    writeFileSync(join(ws, "df", "Dockerfile"), "FROM x\n");
    const checked = build(join(ws, "ctx"), join(ws, "df", "Dockerfile"));
    rmSync(join(ws, "df", "Dockerfile"));
    symlinkSync(join(root, "secret"), join(ws, "df", "Dockerfile"));
    expect(() => readBuildContext(checked, OWNER)).toThrow(/is a symlink now/);
    renameSync(join(ws, "df"), join(ws, "df.old"));
    symlinkSync(root, join(ws, "df"));
    expect(() => readBuildContext(checked, OWNER)).toThrow(/df is a symlink now/);
  });

  it("refuses a Dockerfile inside the context that became a symlink, a folder or a fifo", async () => {
    const checked = build();
    symlinkSync(join(root, "secret"), join(ws, "ctx", "Dockerfile"));
    expect(() => readBuildContext(checked, OWNER)).toThrow(ConfigError);
    rmSync(join(ws, "ctx", "Dockerfile"));
    mkdirSync(join(ws, "ctx", "Dockerfile"));
    expect(() => readBuildContext(checked, OWNER)).toThrow(/not a regular file .*directory/);
    rmSync(join(ws, "ctx", "Dockerfile"), { recursive: true });
    execFileSync("mkfifo", [join(ws, "ctx", "Dockerfile")]);
    expect(() => readBuildContext(checked, OWNER)).toThrow(/not a regular file .*fifo/);
  });

  it("leaves out fifos and sockets without waiting on them", async () => {
    writeFileSync(join(ws, "ctx", "Dockerfile"), "FROM x\n");
    execFileSync("mkfifo", [join(ws, "ctx", "fifo")]);
    const context = readBuildContext(build(), OWNER);
    expect(context.leftOut).toEqual([{ path: "fifo", reason: "fifo" }]);
    expect(context.entries.map((e) => e.name)).not.toContain("fifo");
  });

  it.skipIf(!asRoot)("leaves out a device (a root process may have made one there)", () => {
    writeFileSync(join(ws, "ctx", "Dockerfile"), "FROM x\n");
    execFileSync("mknod", [join(ws, "ctx", "null"), "c", "1", "3"]);
    const context = readBuildContext(build(), OWNER);
    expect(context.leftOut).toEqual([{ path: "null", reason: "character device" }]);
  });

  it.skipIf(!asRoot)(
    "leaves out what the workspace owner cannot read: a root-only file, a hard link to one, a closed folder",
    async () => {
      writeFileSync(join(ws, "ctx", "Dockerfile"), "FROM x\n");
      writeFileSync(join(ws, "ctx", "root-only"), "root's");
      chmodSync(join(ws, "ctx", "root-only"), 0o600);
      // A hard link to a host root-only file: a task cannot make one, but a workspace may hold one.
      linkSync(join(root, "secret"), join(ws, "ctx", "hardlink"));
      mkdirSync(join(ws, "ctx", "closed"));
      writeFileSync(join(ws, "ctx", "closed", "inner"), "inner");
      chmodSync(join(ws, "ctx", "closed"), 0o700);
      writeFileSync(join(ws, "ctx", "mine"), "mine");
      chownSync(join(ws, "ctx", "mine"), 1000, 1000);
      chmodSync(join(ws, "ctx", "mine"), 0o600);
      const context = readBuildContext(build(), OWNER);
      expect(context.leftOut.map((e) => e.path).sort()).toEqual(["closed", "hardlink", "root-only"]);
      expect(context.leftOut[0]?.reason).toBe("the workspace owner (1000:1000) cannot read it");
      expect(contents(context)).toContain("mine");
      expect(contents(context)).not.toContain("host secret");
      expect(contents(context)).not.toContain("root's");
      expect(contents(context)).not.toContain("inner");
    },
  );
});
