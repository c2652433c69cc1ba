import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../../src/errors.js";
import { readSandboxTree } from "../../../../src/sandbox/copy/sandbox-tree.js";
import type { Tree } from "../../../../src/sandbox/copy/tree-diff.js";
import { tarOf } from "../tar-fixture.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const options = (host: Tree, maxTotalBytes = 1024) => ({
  stripPrefix: "workspace/",
  maxTotalBytes,
  host,
  keepFileBytes: 100,
  keepTotalBytes: 1000,
});

describe("readSandboxTree", () => {
  it("reads the archive into a tree, resolving hard links, keeping only changed small files", async () => {
    const host: Tree = new Map([["same.txt", { type: "file", mode: 0o644, size: 4, sha256: sha("same") }]]);
    const { tree, contents, unsafeNames } = await readSandboxTree(
      tarOf([
        { name: "workspace/", type: "directory", mode: 0o755 },
        { name: "workspace/same.txt", mode: 0o644, content: "same" },
        { name: "workspace/new.txt", mode: 0o100640, content: "new" },
        { name: "workspace/big.txt", content: "x".repeat(200) },
        { name: "workspace/second", type: "link", linkname: "workspace/new.txt" },
        { name: "workspace/l", type: "symlink", linkname: "../x" },
        { name: "workspace/../evil", content: "e" },
      ]),
      options(host),
    );
    expect([...tree.keys()]).toEqual(["same.txt", "new.txt", "big.txt", "second", "l"]);
    expect(tree.get("new.txt")).toEqual({ type: "file", mode: 0o640, size: 3, sha256: sha("new") });
    expect(tree.get("second")).toMatchObject({ type: "file", sha256: sha("new"), hardLinkTo: "new.txt" });
    expect(tree.get("l")).toMatchObject({ type: "symlink", linkname: "../x" });
    expect([...contents.keys()]).toEqual(["new.txt"]);
    expect(unsafeNames).toEqual(["workspace/../evil"]);
  });

  it('reads Podman\'s naming of a stopped container\'s volume ("/", "/a.txt") only when it comes first', async () => {
    const podman = await readSandboxTree(
      tarOf([
        { name: "/", type: "directory", mode: 0o755 },
        { name: "/a.txt", content: "a" },
        { name: "/h.txt", type: "link", linkname: "/a.txt" },
        { name: "/../evil", content: "e" },
      ]),
      options(new Map()),
    );
    expect([...podman.tree.keys()]).toEqual(["a.txt", "h.txt"]);
    expect(podman.tree.get("h.txt")).toMatchObject({ sha256: sha("a"), hardLinkTo: "a.txt" });
    expect(podman.unsafeNames).toEqual(["/../evil"]);
    // Docker's naming never switches: a later "/" entry is left out as unsafe.
    const docker = await readSandboxTree(
      tarOf([
        { name: "workspace/", type: "directory", mode: 0o755 },
        { name: "/", type: "directory", mode: 0o755 },
        { name: "/a.txt", content: "a" },
      ]),
      options(new Map()),
    );
    expect([...docker.tree.keys()]).toEqual([]);
    expect(docker.unsafeNames).toEqual(["/", "/a.txt"]);
  });

  it("stops with a SandboxError when the copy grew past the limit", async () => {
    const read = readSandboxTree(
      tarOf([{ name: "workspace/a", content: "x".repeat(2000) }]),
      options(new Map()),
    );
    await expect(read).rejects.toThrow(SandboxError);
  });
});
