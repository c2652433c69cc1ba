import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { strictExtract } from "../../../../../src/sandbox/host/extract/strict-extract.js";
import { strictDelete } from "../../../../../src/sandbox/host/paths/strict-paths.js";
import { tarOf } from "../../tar-fixture.js";

let base: string;
let ws: string;
let sibling: string;

/** Every path under `base` outside the workspace, to prove nothing was created there. */
/**
 * Every symlink under the workspace, with where `readlink -m` (the kernel's resolution, missing
 * components allowed) says it leads: the oracle for "stays inside".
 */
function linksLeadingOutside(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      const info = lstatSync(full);
      if (info.isSymbolicLink()) {
        const resolved = execFileSync("readlink", ["-m", full], { encoding: "utf8" }).trim();
        if (resolved !== ws && !resolved.startsWith(`${ws}/`))
          out.push(`${full.slice(ws.length + 1)} -> ${resolved}`);
      } else if (info.isDirectory()) walk(full);
    }
  };
  walk(ws);
  return out;
}

function outsideListing(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (full === ws) continue;
      out.push(full);
      if (lstatSync(full).isDirectory()) walk(full);
    }
  };
  walk(base);
  return out.sort();
}

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "harness-extract-")));
  ws = join(base, "ws");
  sibling = join(base, "sibling");
  mkdirSync(ws);
  mkdirSync(sibling);
});

afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

describe("strictExtract refuses hostile entries by name and touches nothing outside", () => {
  it("refuses absolute paths and '..' components", async () => {
    const before = outsideListing();
    const result = await strictExtract(
      tarOf([
        { name: join(sibling, "abs.txt"), content: "x" },
        { name: "../sibling/escape.txt", content: "x" },
        { name: "ok/../../sibling/escape2.txt", content: "x" },
      ]),
      { root: ws },
    );
    expect(result.refused).toEqual([
      { path: join(sibling, "abs.txt"), reason: "absolute path" },
      { path: "../sibling/escape.txt", reason: "path contains '..'" },
      { path: "ok/../../sibling/escape2.txt", reason: "path contains '..'" },
    ]);
    expect(result.written).toEqual([]);
    expect(readdirSync(sibling)).toEqual([]);
    expect(outsideListing()).toEqual(before);
    expect(readdirSync(ws)).toEqual([]);
  });

  it("refuses a symlink to an absolute path and a file written through it", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "etc", type: "symlink", linkname: "/etc" },
        { name: "etc/harness-pwned", content: "x" },
        { name: "sib", type: "symlink", linkname: sibling },
        { name: "sib/through.txt", content: "x" },
      ]),
      { root: ws },
    );
    expect(result.refused.map((r) => r.path)).toEqual(["etc", "etc/harness-pwned", "sib", "sib/through.txt"]);
    expect(result.refused[0]?.reason).toBe("symlink to an absolute path (/etc)");
    expect(result.refused[1]?.reason).toBe("inside etc, which was refused");
    expect(() => lstatSync("/etc/harness-pwned")).toThrow();
    expect(readdirSync(sibling)).toEqual([]);
    expect(readdirSync(ws)).toEqual([]);
  });

  it("refuses a relative symlink that climbs out of the workspace", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "up", type: "symlink", linkname: "../../outside" },
        { name: "d/up", type: "symlink", linkname: "../../sibling" },
        { name: "d/in", type: "symlink", linkname: "../up-is-fine/x" },
      ]),
      { root: ws },
    );
    expect(result.refused).toEqual([
      { path: "up", reason: "symlink points outside the workspace (../../outside)" },
      { path: "d/up", reason: "symlink points outside the workspace (../../sibling)" },
    ]);
    expect(result.written).toEqual(["d/in"]);
    expect(readlinkSync(join(ws, "d/in"))).toBe("../up-is-fine/x");
    expect(readdirSync(sibling)).toEqual([]);
  });

  it("refuses hard links, devices and fifos", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "a.txt", content: "a" },
        { name: "hl", type: "link", linkname: "a.txt" },
        { name: "passwd-link", type: "link", linkname: "/etc/passwd" },
        { name: "tty", type: "character-device", devmajor: 5, devminor: 0 },
        { name: "disk", type: "block-device", devmajor: 8, devminor: 0 },
        { name: "pipe", type: "fifo" },
      ]),
      { root: ws },
    );
    expect(result.written).toEqual(["a.txt"]);
    expect(result.refused).toEqual([
      { path: "hl", reason: "hard link (to a.txt) is never created" },
      { path: "passwd-link", reason: "hard link (to /etc/passwd) is never created" },
      { path: "tty", reason: "character-device entries are never created" },
      { path: "disk", reason: "block-device entries are never created" },
      { path: "pipe", reason: "fifo entries are never created" },
    ]);
    expect(readdirSync(ws)).toEqual(["a.txt"]);
  });

  it("strips setuid, setgid and sticky bits", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "suid", mode: 0o4755, content: "#!/bin/sh\n" },
        { name: "sdir", type: "directory", mode: 0o3777 },
      ]),
      { root: ws },
    );
    expect(result.refused).toEqual([]);
    expect(result.notes.map((n) => n.path)).toEqual(["suid", "sdir"]);
    expect(statSync(join(ws, "suid")).mode & 0o7777).toBe(0o755);
    expect(statSync(join(ws, "sdir")).mode & 0o7777).toBe(0o777);
  });

  it("refuses an oversized file and stops at the total limit", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "big", content: "x".repeat(100) },
        { name: "one", content: "y".repeat(30) },
        { name: "two", content: "z".repeat(30) },
      ]),
      { root: ws, maxFileBytes: 50, maxTotalBytes: 40 },
    );
    expect(result.refused).toEqual([
      { path: "big", reason: "file too large (100 bytes, limit 50)" },
      { path: "two", reason: "total size limit reached (40 bytes)" },
    ]);
    expect(readdirSync(ws)).toEqual(["one"]);
  });

  it("refuses a path through an existing host symlink that points outside", async () => {
    symlinkSync("../sibling", join(ws, "hostlink"));
    const result = await strictExtract(
      tarOf([
        { name: "hostlink/pwned.txt", content: "x" },
        { name: "hostlink/deeper/pwned.txt", content: "x" },
      ]),
      { root: ws },
    );
    expect(result.refused).toEqual([
      { path: "hostlink/pwned.txt", reason: "path goes through a symlink (hostlink)" },
      { path: "hostlink/deeper/pwned.txt", reason: "path goes through a symlink (hostlink)" },
    ]);
    expect(readdirSync(sibling)).toEqual([]);
  });

  it("replaces an existing symlink with the file instead of writing through it", async () => {
    writeFileSync(join(sibling, "target.txt"), "original");
    symlinkSync("../sibling/target.txt", join(ws, "victim"));
    const result = await strictExtract(tarOf([{ name: "victim", content: "new" }]), { root: ws });
    expect(result).toMatchObject({ written: ["victim"], refused: [] });
    expect(lstatSync(join(ws, "victim")).isFile()).toBe(true);
    expect(readFileSync(join(ws, "victim"), "utf8")).toBe("new");
    expect(readFileSync(join(sibling, "target.txt"), "utf8")).toBe("original");
    expect(readdirSync(sibling)).toEqual(["target.txt"]);
  });
});

describe("strictExtract resolves symlink targets through the links on the way", () => {
  it("refuses s2 -> s1/../.. when s1 -> ../.. (lexically inside, really the workspace's parent)", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "d1/", type: "directory", mode: 0o755 },
        { name: "d1/d2/", type: "directory", mode: 0o755 },
        { name: "d1/d2/s1", type: "symlink", linkname: "../.." },
        { name: "d1/d2/s2", type: "symlink", linkname: "s1/../.." },
        { name: "d1/d2/s3", type: "symlink", linkname: "s1/d1" },
      ]),
      { root: ws },
    );
    expect(result.refused).toEqual([
      {
        path: "d1/d2/s2",
        reason: "symlink points outside the workspace once links are followed (s1/../.. via d1/d2/s1)",
      },
    ]);
    expect(result.written).toEqual(["d1", "d1/d2", "d1/d2/s1", "d1/d2/s3"]);
    expect(linksLeadingOutside()).toEqual([]);
    expect(realpathSync(join(ws, "d1/d2/s3"))).toBe(join(ws, "d1"));
  });

  it("follows links that already exist on the host, and refuses one through an absolute link", async () => {
    mkdirSync(join(ws, "d1/d2"), { recursive: true });
    symlinkSync("../..", join(ws, "d1/d2/host-up"));
    symlinkSync("/etc", join(ws, "abs"));
    const result = await strictExtract(
      tarOf([
        { name: "d1/d2/through-host", type: "symlink", linkname: "host-up/.." },
        { name: "via-abs", type: "symlink", linkname: "abs/.." },
        { name: "chain", type: "symlink", linkname: "d1/d2/host-up/d1/d2/host-up/.." },
      ]),
      { root: ws },
    );
    expect(result.refused).toEqual([
      {
        path: "d1/d2/through-host",
        reason: "symlink points outside the workspace once links are followed (host-up/.. via d1/d2/host-up)",
      },
      { path: "via-abs", reason: "symlink goes through abs, a symlink to an absolute path (/etc)" },
      {
        path: "chain",
        reason:
          "symlink points outside the workspace once links are followed (d1/d2/host-up/d1/d2/host-up/.. via d1/d2/host-up, d1/d2/host-up)",
      },
    ]);
    expect(result.written).toEqual([]);
  });

  it("refuses '..' out of a path that is not a directory yet, since a later link there could climb", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "d1/d2/", type: "directory", mode: 0o755 },
        { name: "d1/d2/s2", type: "symlink", linkname: "s1/../.." },
        { name: "d1/d2/s1", type: "symlink", linkname: "../.." },
        { name: "d1/d2/dangling", type: "symlink", linkname: "not-yet/built/file" },
      ]),
      { root: ws },
    );
    expect(result.refused).toEqual([
      {
        path: "d1/d2/s2",
        reason: "symlink target uses '..' after d1/d2/s1, which is not a directory here (s1/../..)",
      },
    ]);
    expect(result.written).toEqual(["d1/d2", "d1/d2/s1", "d1/d2/dangling"]);
    expect(linksLeadingOutside()).toEqual([]);
  });

  it("removes a link again when a later entry turns it into an escape (a directory replaced by a link)", async () => {
    mkdirSync(join(ws, "d1/d2/s1"), { recursive: true });
    const result = await strictExtract(
      tarOf([
        // Written while s1 is still a directory: resolves to d1.
        { name: "d1/d2/s2", type: "symlink", linkname: "s1/../.." },
        // The empty directory s1 is replaced by a link to the root: s2 now leads above it.
        { name: "d1/d2/s1", type: "symlink", linkname: "../.." },
      ]),
      { root: ws },
    );
    expect(result.written).toEqual(["d1/d2/s1"]);
    expect(result.refused).toEqual([
      {
        path: "d1/d2/s2",
        reason:
          "removed again: symlink points outside the workspace once links are followed (s1/../.. via d1/d2/s1)",
      },
    ]);
    expect(() => lstatSync(join(ws, "d1/d2/s2"))).toThrow();
    expect(linksLeadingOutside()).toEqual([]);
  });

  it("removes a new link that makes an existing host link lead outside", async () => {
    mkdirSync(join(ws, "d1/d2/s1"), { recursive: true });
    symlinkSync("s1/../..", join(ws, "d1/d2/old"));
    const result = await strictExtract(tarOf([{ name: "d1/d2/s1", type: "symlink", linkname: "../.." }]), {
      root: ws,
      recheckLinks: ["d1/d2/old"],
    });
    expect(result.written).toEqual([]);
    expect(result.refused).toEqual([
      {
        path: "d1/d2/s1",
        reason: "removed again: it makes the symlink d1/d2/old point outside the workspace",
      },
    ]);
    expect(linksLeadingOutside()).toEqual([]);
  });

  it("refuses a symlink loop", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "a", type: "symlink", linkname: "b" },
        { name: "b", type: "symlink", linkname: "a" },
      ]),
      { root: ws },
    );
    expect(result.written).toEqual(["a"]);
    expect(result.refused).toEqual([{ path: "b", reason: "too many levels of symlinks" }]);
  });
});

describe("strictExtract writes ordinary trees", () => {
  it("writes dirs, files, in-tree symlinks, strips a prefix, and leaves no temp files", async () => {
    const result = await strictExtract(
      tarOf([
        { name: "workspace/", type: "directory", mode: 0o755 },
        { name: "workspace/src/", type: "directory", mode: 0o750 },
        { name: "workspace/src/main.py", mode: 0o644, content: "print('hi')\n" },
        { name: "workspace/run.sh", mode: 0o755, content: "#!/bin/sh\n" },
        { name: "workspace/latest", type: "symlink", linkname: "src/main.py" },
        { name: "elsewhere/x", content: "x" },
      ]),
      { root: ws, stripPrefix: "workspace/" },
    );
    expect(result.written).toEqual(["src", "src/main.py", "run.sh", "latest"]);
    expect(result.refused).toEqual([{ path: "elsewhere/x", reason: "outside workspace/" }]);
    expect(statSync(join(ws, "src")).mode & 0o777).toBe(0o750);
    expect(statSync(join(ws, "run.sh")).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(ws, "latest"), "utf8")).toBe("print('hi')\n");
    expect(readdirSync(ws).sort()).toEqual(["latest", "run.sh", "src"]);
  });

  it("reads Podman's naming of a stopped container's volume (\"/\" first), and nothing escapes it", async () => {
    const before = outsideListing();
    const result = await strictExtract(
      tarOf([
        { name: "/", type: "directory", mode: 0o755 },
        { name: "/a.txt", mode: 0o644, content: "a" },
        { name: "/../up.txt", content: "u" },
      ]),
      { root: ws, stripPrefix: "workspace/" },
    );
    expect(result.written).toEqual(["a.txt"]);
    expect(result.refused.map((r) => r.path)).toEqual(["/../up.txt"]);
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("a");
    expect(outsideListing()).toEqual(before);
  });

  it("writes only reviewed entries, and refuses one whose content no longer matches", async () => {
    const sha = (s: string) => createHash("sha256").update(s).digest("hex");
    const expected = new Map([
      ["a.txt", { type: "file", mode: 0o644, size: 1, sha256: sha("a") }],
      ["b.txt", { type: "file", mode: 0o644, size: 1, sha256: sha("reviewed") }],
      ["gone.txt", { type: "file", mode: 0o644, size: 1, sha256: sha("g") }],
    ]);
    const result = await strictExtract(
      tarOf([
        { name: "a.txt", mode: 0o644, content: "a" },
        { name: "b.txt", mode: 0o644, content: "swapped" },
        { name: "unreviewed.txt", mode: 0o644, content: "u" },
      ]),
      { root: ws, expected },
    );
    expect(result.written).toEqual(["a.txt"]);
    expect(result.refused).toEqual([
      { path: "b.txt", reason: "content changed in the sandbox since it was reviewed" },
      { path: "gone.txt", reason: "missing from the sandbox's archive" },
    ]);
    expect(readdirSync(ws)).toEqual(["a.txt"]);
  });

  it("refuses extra paths by policy", async () => {
    const result = await strictExtract(tarOf([{ name: ".git/hooks/pre-commit", content: "evil" }]), {
      root: ws,
      refusePath: (p) => (p.startsWith(".git/hooks/") ? "git hook" : undefined),
    });
    expect(result.refused).toEqual([{ path: ".git/hooks/pre-commit", reason: "git hook" }]);
  });
});

describe("strictDelete", () => {
  it("deletes children first, removes symlinks themselves, keeps non-empty dirs, refuses escapes", async () => {
    writeFileSync(join(sibling, "keep.txt"), "keep");
    mkdirSync(join(ws, "d/e"), { recursive: true });
    writeFileSync(join(ws, "d/e/f.txt"), "f");
    symlinkSync("../sibling", join(ws, "link"));
    mkdirSync(join(ws, "kept"));
    writeFileSync(join(ws, "kept/not-copied.txt"), "x");
    const result = await strictDelete(ws, [
      "d",
      "d/e",
      "d/e/f.txt",
      "link",
      "link/keep.txt",
      "kept",
      "../sibling/keep.txt",
    ]);
    expect(result.deleted.sort()).toEqual(["d", "d/e", "d/e/f.txt", "link"]);
    expect(result.refused).toEqual([
      { path: "link/keep.txt", reason: "path goes through a symlink (link)" },
      { path: "kept", reason: "directory is not empty (holds files that were not copied)" },
      { path: "../sibling/keep.txt", reason: "path contains '..'" },
    ]);
    expect(readdirSync(ws)).toEqual(["kept"]);
    expect(readFileSync(join(sibling, "keep.txt"), "utf8")).toBe("keep");
  });
});
