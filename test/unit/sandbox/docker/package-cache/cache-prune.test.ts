/**
 * cache-prune.py itself, run by the host's python3 on a directory made here (in harness it only ever
 * runs in a throwaway container on the cache volume): measuring, pruning the least recently used
 * files to 80 % of the bound, and never following a symlink a task left in the cache.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const PROGRAM = fileURLToPath(
  new URL("../../../../../src/sandbox/docker/package-cache/cache-prune.py", import.meta.url),
);
const uid = process.getuid?.() ?? 0;
const gid = process.getgid?.() ?? 0;
const KIB = 1024;

interface Sizes {
  before: number;
  after: number;
  removed: number;
  files: number;
}

/** The keeper on the volumes mounted in `mount` (here: the directories in it). */
function prune(mount: string, maxBytes: number): Sizes {
  return JSON.parse(
    execFileSync("python3", ["-I", "-S", PROGRAM, mount, `${uid}`, `${gid}`, `${maxBytes}`], {
      encoding: "utf8",
    }),
  ) as Sizes;
}

/** A file of `kib` KiB last used at `year`. */
function file(path: string, kib: number, year: number): void {
  writeFileSync(path, Buffer.alloc(kib * KIB, 1));
  const when = new Date(`${year}-01-01T00:00:00Z`);
  utimesSync(path, when, when);
}

describe("cache-prune.py", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  /** One volume's root (`root`), in the mount directory the keeper is given (`mount`). */
  function cache(): { mount: string; root: string; outside: string } {
    const base = mkdtempSync(join(tmpdir(), "harness-cache-prune-"));
    dirs.push(base);
    mkdirSync(join(base, "cache", "vol-a", "npm", "_cacache"), { recursive: true });
    mkdirSync(join(base, "outside"));
    return { mount: join(base, "cache"), root: join(base, "cache", "vol-a"), outside: join(base, "outside") };
  }

  it("under the bound: measures, removes nothing, and gives the root to the user, mode 0700", () => {
    const { mount, root } = cache();
    file(join(root, "npm", "_cacache", "a"), 64, 2021);
    const sizes = prune(mount, 10 * 1024 * KIB);
    expect(sizes.removed).toBe(0);
    expect(sizes.files).toBe(1);
    expect(sizes.before).toBe(sizes.after);
    expect(sizes.before).toBeGreaterThanOrEqual(64 * KIB);
    expect(lstatSync(root).mode & 0o777).toBe(0o700);
  });

  it("over the bound: the least recently used files go until 80 % of it is left", () => {
    const { mount, root } = cache();
    file(join(root, "npm", "_cacache", "oldest"), 400, 2019);
    file(join(root, "npm", "_cacache", "older"), 400, 2020);
    file(join(root, "npm", "_cacache", "newer"), 400, 2022);
    mkdirSync(join(root, "pip", "http", "a"), { recursive: true });
    file(join(root, "pip", "http", "a", "newest"), 300, 2023);
    // 1,500 KiB over a bound of 1,200 KiB: down to 960 KiB, so the two oldest go.
    const sizes = prune(mount, 1200 * KIB);
    expect(sizes.removed).toBe(2);
    expect(sizes.after).toBeLessThanOrEqual(0.8 * 1200 * KIB);
    expect(readdirSync(join(root, "npm", "_cacache")).sort()).toEqual(["newer"]);
    expect(readdirSync(join(root, "pip", "http", "a"))).toEqual(["newest"]);
  });

  it("never follows a symlink: its target outside the cache is neither counted nor removed", () => {
    const { mount, root, outside } = cache();
    file(join(outside, "big"), 2048, 2000);
    mkdirSync(join(outside, "dir"));
    file(join(outside, "dir", "inside"), 2048, 2000);
    symlinkSync(join(outside, "big"), join(root, "npm", "to-file"));
    symlinkSync(join(outside, "dir"), join(root, "npm", "to-dir"));
    file(join(root, "npm", "_cacache", "mine"), 200, 2021);
    const sizes = prune(mount, 100 * KIB);
    // The links are the oldest entries here only if their targets were read: they are not.
    expect(sizes.before).toBeLessThan(1024 * KIB);
    expect(readdirSync(outside).sort()).toEqual(["big", "dir"]);
    expect(readdirSync(join(outside, "dir"))).toEqual(["inside"]);
  });

  it("reads no link while walking: a link last used long ago is still the oldest entry", () => {
    const { mount, root, outside } = cache();
    file(join(outside, "target"), 4, 2000);
    symlinkSync(join(outside, "target"), join(root, "npm", "stale-link"));
    const longAgo = new Date("2000-01-01T00:00:00Z");
    lutimesSync(join(root, "npm", "stale-link"), longAgo, longAgo);
    file(join(root, "npm", "_cacache", "a"), 400, 2019);
    file(join(root, "npm", "_cacache", "b"), 400, 2023);
    // Down to 560 KiB: the link (oldest, no blocks), then a.
    const sizes = prune(mount, 700 * KIB);
    expect(sizes.removed).toBe(2);
    expect(readdirSync(join(root, "npm")).sort()).toEqual(["_cacache"]);
    expect(readdirSync(join(root, "npm", "_cacache"))).toEqual(["b"]);
  });

  it("drops npm's index entries whose content it removed, so npm downloads again instead of failing", () => {
    const { mount, root } = cache();
    const cacache = join(root, "npm", "_cacache");
    /** A cacache entry: content under content-v2 by its sha512, an index bucket line naming it. */
    const entry = (key: string, kib: number, year: number, bucket: string) => {
      const data = Buffer.alloc(kib * KIB, year % 256);
      const digest = createHash("sha512").update(data).digest();
      const hex = digest.toString("hex");
      const dir = join(cacache, "content-v2", "sha512", hex.slice(0, 2), hex.slice(2, 4));
      mkdirSync(dir, { recursive: true });
      file(join(dir, hex.slice(4)), 0, year);
      writeFileSync(join(dir, hex.slice(4)), data);
      const when = new Date(`${year}-01-01T00:00:00Z`);
      utimesSync(join(dir, hex.slice(4)), when, when);
      const line = JSON.stringify({
        key,
        integrity: `sha512-${digest.toString("base64")}`,
        time: 0,
        size: data.length,
      });
      mkdirSync(join(cacache, "index-v5", bucket.slice(0, 2)), { recursive: true });
      writeFileSync(
        join(cacache, "index-v5", bucket.slice(0, 2), bucket),
        `${createHash("sha1").update(line).digest("hex")}\t${line}\n`,
      );
    };
    entry("make-fetch-happen:request-cache:http://r/old.tgz", 400, 2019, "aaold");
    entry("make-fetch-happen:request-cache:http://r/new.tgz", 400, 2023, "bbnew");
    // The old tarball's content is the least recently used file: it goes, and its index entry with it.
    const sizes = prune(mount, 600 * KIB);
    expect(sizes.removed).toBeGreaterThanOrEqual(1);
    expect(existsSync(join(cacache, "index-v5", "aa", "aaold"))).toBe(false);
    expect(readdirSync(join(cacache, "index-v5", "bb"))).toEqual(["bbnew"]);
  });

  it("removes pip's cached headers and body together (http-v2)", () => {
    const { mount, root } = cache();
    const dir = join(root, "pip", "http-v2", "a", "b");
    mkdirSync(dir, { recursive: true });
    file(join(dir, "old.body"), 400, 2019);
    file(join(dir, "old"), 1, 2024);
    file(join(dir, "new.body"), 400, 2023);
    file(join(dir, "new"), 1, 2023);
    const sizes = prune(mount, 600 * KIB);
    expect(sizes.removed).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(["new", "new.body"]);
  });

  it("prunes a user's caches together: the bound is over all of them, the least recently used go first", () => {
    const { mount, root } = cache();
    const other = join(mount, "vol-b");
    mkdirSync(join(other, "pip", "http"), { recursive: true });
    file(join(root, "npm", "_cacache", "a-new"), 400, 2023);
    file(join(other, "pip", "http", "b-old"), 400, 2019);
    file(join(other, "pip", "http", "b-newer"), 400, 2022);
    // 1,200 KiB (and a few directories) in two caches over a bound of 1,100 KiB: down to 880 KiB, so
    // b-old goes.
    const sizes = prune(mount, 1100 * KIB);
    expect(sizes.removed).toBe(1);
    expect(sizes.files).toBe(2);
    expect(readdirSync(join(other, "pip", "http"))).toEqual(["b-newer"]);
    expect(readdirSync(join(root, "npm", "_cacache"))).toEqual(["a-new"]);
    // Every volume's root stays, its owner's, 0700.
    for (const volume of [root, other]) expect(lstatSync(volume).mode & 0o777).toBe(0o700);
  });

  it("one cache's entries never reach into another's: a bucket naming content only another cache has goes, that content stays", () => {
    const { mount, root } = cache();
    const other = join(mount, "vol-b");
    const data = Buffer.alloc(8 * KIB, 7);
    const digest = createHash("sha512").update(data).digest();
    const hex = digest.toString("hex");
    // vol-b holds the content; vol-a's index names it (a task in A can write any bucket in A).
    const dir = join(other, "npm", "_cacache", "content-v2", "sha512", hex.slice(0, 2), hex.slice(2, 4));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, hex.slice(4)), data);
    const line = JSON.stringify({
      key: "k",
      integrity: `sha512-${digest.toString("base64")}`,
      size: data.length,
    });
    mkdirSync(join(root, "npm", "_cacache", "index-v5", "aa"), { recursive: true });
    writeFileSync(join(root, "npm", "_cacache", "index-v5", "aa", "aabucket"), `x\t${line}\n`);
    file(join(root, "npm", "_cacache", "old"), 400, 2019);
    file(join(root, "npm", "_cacache", "new"), 400, 2023);
    prune(mount, 600 * KIB);
    expect(existsSync(join(root, "npm", "_cacache", "index-v5", "aa", "aabucket"))).toBe(false);
    expect(existsSync(join(dir, hex.slice(4)))).toBe(true);
  });

  it("removes a Go module or an unpacked crate whole or not at all, as recent as its latest use", () => {
    const { mount, root } = cache();
    // Go makes its module cache read-only: the keeper (root with DAC_OVERRIDE) removes it anyway.
    const module = join(root, "go", "mod", "example.com", "lib@v1.0.0");
    const crate = join(root, "cargo", "registry", "src", "index.crates.io-1", "itoa-1.0.0");
    for (const dir of [module, join(crate, "src")]) mkdirSync(dir, { recursive: true });
    file(join(module, "LICENSE"), 200, 2018);
    file(join(module, "lib.go"), 200, 2024);
    file(join(crate, "Cargo.toml"), 200, 2017);
    file(join(crate, "src", "lib.rs"), 200, 2020);
    mkdirSync(join(root, "pip", "http"), { recursive: true });
    file(join(root, "pip", "http", "loose"), 200, 2022);
    chmodSync(module, 0o555);
    // 1,000 KiB over a bound of 900 KiB: down to 720 KiB. By single files the module's LICENSE
    // (2018) would go first; as units, the crate (latest use 2020) goes whole, and nothing else.
    const one = prune(mount, 900 * KIB);
    expect(one.removed).toBe(2);
    expect(existsSync(crate)).toBe(false);
    expect(readdirSync(module).sort()).toEqual(["LICENSE", "lib.go"]);
    expect(readdirSync(join(root, "pip", "http"))).toEqual(["loose"]);
    // Tighter: the loose file (2022), then the module (2024) as a whole.
    const two = prune(mount, 300 * KIB);
    expect(two.removed).toBe(3);
    expect(existsSync(module)).toBe(false);
  });

  it("-1 only measures: nothing removed, the root's owner and mode unchanged", () => {
    const { mount, root } = cache();
    file(join(root, "npm", "_cacache", "a"), 512, 2019);
    const mode = lstatSync(root).mode & 0o777;
    const sizes = prune(mount, -1);
    expect(sizes).toMatchObject({ removed: 0, files: 1 });
    expect(lstatSync(root).mode & 0o777).toBe(mode);
  });
});
