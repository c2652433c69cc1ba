import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { extract } from "tar-stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../../src/errors.js";
import { packWorkspace, planWorkspaceCopy } from "../../../../src/sandbox/copy/workspace-archive.js";

let root: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-pack-")));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

async function listTar(stream: Readable): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  const ex = extract();
  stream.pipe(ex);
  for await (const entry of ex) {
    let content = "";
    for await (const chunk of entry) content += (chunk as Buffer).toString();
    const { name, type, mode, uid, gid, linkname } = entry.header;
    out.push({ name, type, mode: mode & 0o7777, uid, gid, ...(linkname ? { linkname } : {}), content });
  }
  return out;
}

describe("packing the workspace for copy mode", () => {
  it("packs files, dirs and symlinks (never followed), owned by the sandbox user; skips .harness and special files", async () => {
    mkdirSync(join(root, ".git"));
    writeFileSync(join(root, ".git/HEAD"), "ref: refs/heads/main\n");
    mkdirSync(join(root, ".harness"));
    writeFileSync(join(root, ".harness/state"), "x");
    writeFileSync(join(root, "run.sh"), "#!/bin/sh\n", { mode: 0o4755 });
    symlinkSync("/etc/passwd", join(root, "passwd-link"));
    execFileSync("mkfifo", [join(root, "fifo")]);
    const server = createServer().listen(join(root, "sock"));
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      const plan = await planWorkspaceCopy(root, 1024 ** 2);
      expect(plan.scan.skipped).toEqual([
        { path: "fifo", reason: "fifo" },
        { path: "sock", reason: "socket" },
      ]);
      const packed = packWorkspace(plan, { uid: 1234, gid: 5678 });
      const entries = await listTar(packed.stream);
      await packed.done;
      const owner = { uid: 1234, gid: 5678 };
      expect(entries).toEqual([
        { name: "/", type: "directory", mode: 0o755, ...owner, content: "" },
        { name: ".git/", type: "directory", mode: expect.any(Number), ...owner, content: "" },
        { name: ".git/HEAD", type: "file", mode: 0o644, ...owner, content: "ref: refs/heads/main\n" },
        {
          name: "passwd-link",
          type: "symlink",
          mode: expect.any(Number),
          ...owner,
          linkname: "/etc/passwd",
          content: "",
        },
        { name: "run.sh", type: "file", mode: 0o755, ...owner, content: "#!/bin/sh\n" },
      ]);
    } finally {
      server.close();
    }
  });

  it("refuses a workspace over the limit with a ConfigError naming its size", async () => {
    writeFileSync(join(root, "big"), Buffer.alloc(3 * 1024 * 1024));
    const attempt = planWorkspaceCopy(root, 2 * 1024 * 1024);
    await expect(attempt).rejects.toThrow(ConfigError);
    await expect(attempt).rejects.toThrow(
      /holds 3\.0 MiB \(3145728 bytes\) of files, over the copy limit of 2\.0 MiB/,
    );
  });

  it("honours .harnessignore", async () => {
    writeFileSync(join(root, ".harnessignore"), "*.log\nbuild/\n");
    writeFileSync(join(root, "x.log"), "log");
    mkdirSync(join(root, "build"));
    writeFileSync(join(root, "build/out"), "o");
    writeFileSync(join(root, "keep.txt"), "k");
    const plan = await planWorkspaceCopy(root, 1024);
    expect(plan.scan.entries.map((e) => e.path)).toEqual([".harnessignore", "keep.txt"]);
  });
});
