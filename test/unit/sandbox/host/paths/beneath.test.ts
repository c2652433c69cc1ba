/**
 * beneath.ts on this kernel: a directory opened through its parent stays the one operated in when
 * its path is swapped for a symlink afterwards, for every operation copy mode does; a symlinked or
 * non-directory component is refused by name; every descriptor is closed.
 */
import {
  constants,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import {
  lchown,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  rename,
  rmdir,
  symlink,
  unlink,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BeneathError, BeneathRoot, withBeneath } from "../../../../../src/sandbox/host/paths/beneath.js";

let base: string;
let ws: string;
let outside: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "harness-beneath-")));
  ws = join(base, "ws");
  outside = join(base, "outside");
  mkdirSync(join(ws, "a/b"), { recursive: true });
  writeFileSync(join(ws, "a/b/f"), "inside\n");
  symlinkSync("f", join(ws, "a/b/l"));
  mkdirSync(outside);
  writeFileSync(join(outside, "f"), "OUTSIDE\n");
  symlinkSync("/OUTSIDE", join(outside, "l"));
  mkdirSync(join(outside, "sub"), { mode: 0o700 });
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** `a` becomes a symlink to the outside directory; the real one is kept as `a.real`. */
function swapA(): void {
  renameSync(join(ws, "a"), join(ws, "a.real"));
  symlinkSync(outside, join(ws, "a"));
}

const openFds = () => readdirSync("/proc/self/fd").length;

describe("BeneathRoot through /proc/self/fd", () => {
  it("keeps every operation in the directory it opened when a parent is swapped for a symlink afterwards", async () => {
    const outsideBefore = readdirSync(outside).sort();
    await withBeneath(ws, async (beneath) => {
      const b = await beneath.dir(["a", "b"]);
      expect(b.path).toMatch(/^\/proc\/self\/fd\/\d+$/);
      swapA();
      const file = await open(b.at("f"), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      expect(await file.readFile("utf8")).toBe("inside\n");
      await file.close();
      expect((await lstat(b.at("l"))).isSymbolicLink()).toBe(true);
      expect(await readlink(b.at("l"))).toBe("f");
      expect((await readdir(b.path)).sort()).toEqual(["f", "l"]);
      await mkdir(b.at("made"), { mode: 0o755 });
      await symlink("f", b.at("ln"));
      await rename(b.at("ln"), b.at("ln2"));
      await lchown(b.at("ln2"), 4321, 4321);
      const made = await beneath.dir(["a", "b", "made"]);
      await made.chmod(0o711);
      await made.chown(4321, 4321);
      await rmdir(b.at("made")); // the open descriptor does not keep it
      await unlink(b.at("f"));
    });
    expect(readdirSync(join(ws, "a.real/b")).sort()).toEqual(["l", "ln2"]);
    expect(lstatSync(join(ws, "a.real/b/ln2")).uid).toBe(4321);
    expect(readdirSync(outside).sort()).toEqual(outsideBefore);
    expect(readFileSync(join(outside, "f"), "utf8")).toBe("OUTSIDE\n");
  });

  it("chmod and chown of a directory reach it even when its name is swapped for a symlink", async () => {
    await withBeneath(ws, async (beneath) => {
      const b = await beneath.dir(["a", "b"]);
      renameSync(join(ws, "a/b"), join(ws, "a/b.real"));
      symlinkSync(join(outside, "sub"), join(ws, "a/b"));
      await b.chmod(0o750);
      await b.chown(4321, 4321);
    });
    expect(statSync(join(ws, "a/b.real")).mode & 0o777).toBe(0o750);
    expect(statSync(join(ws, "a/b.real")).uid).toBe(4321);
    expect(statSync(join(outside, "sub")).mode & 0o777).toBe(0o700);
    expect(statSync(join(outside, "sub")).uid).toBe(process.getuid?.());
  });

  it("refuses a symlinked component, a file component and a missing one, naming it", async () => {
    symlinkSync(outside, join(ws, "link"));
    symlinkSync(join(outside, "f"), join(ws, "filelink"));
    symlinkSync("/nonexistent", join(ws, "dangling"));
    await withBeneath(ws, async (beneath) => {
      const failure = (parts: string[]) =>
        beneath.dir(parts).then(
          () => undefined,
          (error: unknown) =>
            error instanceof BeneathError ? { code: error.code, at: error.at } : { other: String(error) },
        );
      expect(await failure(["link", "f"])).toEqual({ code: "ELOOP", at: "link" });
      expect(await failure(["filelink"])).toEqual({ code: "ELOOP", at: "filelink" });
      expect(await failure(["dangling"])).toEqual({ code: "ELOOP", at: "dangling" });
      expect(await failure(["a", "b", "f"])).toEqual({ code: "ENOTDIR", at: "a/b/f" });
      expect(await failure(["a", "missing", "x"])).toEqual({ code: "ENOENT", at: "a/missing" });
      await expect(beneath.dir([".."])).rejects.toThrow(/not a single path component/);
      await expect(beneath.dir(["a/b"])).rejects.toThrow(/not a single path component/);
    });
  });

  it("fails at the first dir() when the root itself is gone, like any component", async () => {
    await withBeneath(join(base, "gone"), async (beneath) => {
      await expect(beneath.dir([])).rejects.toMatchObject({
        code: "ENOENT",
        at: "",
        message: "the root does not exist",
      });
    });
  });

  it("creates missing directories with createMode, and never through a symlink", async () => {
    symlinkSync(outside, join(ws, "link"));
    await withBeneath(ws, async (beneath) => {
      const made = await beneath.dir(["new", "deeper"], 0o755);
      expect(made.rel).toBe("new/deeper");
      await expect(beneath.dir(["link", "new"], 0o755)).rejects.toMatchObject({ code: "ELOOP", at: "link" });
    });
    expect(statSync(join(ws, "new/deeper")).isDirectory()).toBe(true);
    expect(readdirSync(outside).sort()).toEqual(["f", "l", "sub"]);
  });

  it("keeps a directory open while paths inside it are walked, and closes everything at the end", async () => {
    const before = openFds();
    mkdirSync(join(ws, "a/c"));
    await withBeneath(ws, async (beneath) => {
      const a = await beneath.dir(["a"]);
      await beneath.dir(["a", "b"]);
      await beneath.dir(["a", "c"]);
      // `a` is a prefix of both: still open, and still the directory opened first.
      swapA();
      expect((await readdir(a.path)).sort()).toEqual(["b", "c"]);
      await expect(beneath.dir(["a", "b"])).resolves.toMatchObject({ rel: "a/b" });
      expect(openFds()).toBe(before + 3);
      await expect(beneath.dir(["a.real", "missing"])).rejects.toBeInstanceOf(BeneathError);
    });
    expect(openFds()).toBe(before);
  });

  it("names the directories it holds in error messages, not their descriptors", async () => {
    await withBeneath(ws, async (beneath) => {
      const b = await beneath.dir(["a", "b"]);
      const error = await mkdir(b.at("f")).catch((e: Error) => e);
      expect(beneath.explain(String(error))).toBe(`Error: EEXIST: file already exists, mkdir '${ws}/a/b/f'`);
    });
  });
});

describe("BeneathRoot without /proc/self/fd (the fallback: lstat checks, full paths)", () => {
  it("refuses a symlinked or non-directory component by lstat, and works with full paths", async () => {
    symlinkSync(outside, join(ws, "link"));
    const beneath = new BeneathRoot(ws, { useProc: false });
    try {
      const b = await beneath.dir(["a", "b"]);
      expect(b.path).toBe(join(ws, "a/b"));
      expect(readFileSync(b.at("f"), "utf8")).toBe("inside\n");
      await expect(beneath.dir(["link"])).rejects.toMatchObject({ code: "ELOOP", at: "link" });
      await expect(beneath.dir(["a", "b", "f"])).rejects.toMatchObject({ code: "ENOTDIR", at: "a/b/f" });
      await expect(beneath.dir(["gone"])).rejects.toMatchObject({ code: "ENOENT", at: "gone" });
      expect((await beneath.dir(["made"], 0o755)).path).toBe(join(ws, "made"));
    } finally {
      await beneath.close();
    }
  });
});
