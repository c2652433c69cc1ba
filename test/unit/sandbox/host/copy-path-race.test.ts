/**
 * Copy mode against a process that swaps workspace directories for symlinks while harness reads or
 * writes the workspace on the host (issue 8, finding 4): checking each component with lstat and then
 * opening by full path lets such a process put an outside directory under a checked path. Each case
 * checks from the host that no outside content was read and nothing outside was written or deleted.
 */
import { createHash } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { extract } from "tar-stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { renderDiffs } from "../../../../src/sandbox/copy/change-report.js";
import type { IgnoreMatcher } from "../../../../src/sandbox/copy/ignore-rules.js";
import type { Change } from "../../../../src/sandbox/copy/tree-diff.js";
import {
  packWorkspace,
  planWorkspaceCopy,
  type WorkspaceCopyPlan,
} from "../../../../src/sandbox/copy/workspace-archive.js";
import { hostTree, scanWorkspace } from "../../../../src/sandbox/copy/workspace-scan.js";
import { strictExtract } from "../../../../src/sandbox/host/extract/strict-extract.js";
import { strictDelete } from "../../../../src/sandbox/host/paths/strict-paths.js";
import { type FixtureEntry, tarOf } from "../tar-fixture.js";
import { startSwapRacer } from "./path-swap-racer.js";

const SECRET = "TOP SECRET host content";
const sha = (text: string) => createHash("sha256").update(text).digest("hex");

let base: string;
/** The workspace; `d` in it is the directory that gets swapped. */
let ws: string;
/** Outside the workspace: what a read must never see (stands in for /etc). */
let secrets: string;
/** Outside the workspace: where a write must never land (stands in for /root/.ssh). */
let victim: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "harness-race-")));
  ws = join(base, "ws");
  secrets = join(base, "secrets");
  victim = join(base, "victim");
  mkdirSync(join(ws, "d"), { recursive: true });
  writeFileSync(join(ws, "top.txt"), "top\n");
  writeFileSync(join(ws, "d/secret"), "inside\n");
  symlinkSync("secret", join(ws, "d/link"));
  mkdirSync(secrets);
  writeFileSync(join(secrets, "secret"), `${SECRET}\n`, { mode: 0o600 });
  writeFileSync(join(secrets, "only-outside"), `${SECRET} 2\n`, { mode: 0o600 });
  symlinkSync(`/${SECRET}`, join(secrets, "link"));
  mkdirSync(victim);
  writeFileSync(join(victim, "keep"), "keep\n", { mode: 0o600 });
  writeFileSync(join(victim, "gone"), "keep\n", { mode: 0o600 });
  mkdirSync(join(victim, "sub"), { mode: 0o700 });
  mkdirSync(join(victim, "target.txt"), { mode: 0o700 });
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** A change report entry for `d/secret`, whose diff must never show the outside file's content. */
const SECRET_CHANGED: Change = {
  kind: "M",
  path: "d/secret",
  differs: ["content"],
  before: { type: "file", mode: 0o644, size: 7 },
  after: { type: "file", mode: 0o644, size: 4 },
};

/** Replaces `ws/d` by a symlink to `to`, as a process in the workspace's bind container can. */
function swapD(to: string): void {
  renameSync(join(ws, "d"), join(ws, "d.real"));
  symlinkSync(to, join(ws, "d"));
}

/**
 * An ignore matcher (the scan asks it about each path right after that path's lstat) that swaps `d`
 * for a link to the secrets the first time it is asked about `at`; `swapped()` says whether it did.
 */
function swapWhenAsked(at: string): { ignored: IgnoreMatcher; swapped: () => boolean } {
  let swapped = false;
  const ignored: IgnoreMatcher = (path) => {
    if (path === at && !swapped) {
      swapped = true;
      swapD(secrets);
    }
    return false;
  };
  return { ignored, swapped: () => swapped };
}

/** Every path under `dir` with its type, mode, owner and content or link target. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const full = rel === "" ? dir : join(dir, rel);
    const info = lstatSync(full);
    const what = info.isSymbolicLink()
      ? `-> ${readlinkSync(full)}`
      : info.isFile()
        ? readFileSync(full, "utf8")
        : info.isDirectory()
          ? "dir"
          : "other";
    out[rel] = `${(info.mode & 0o7777).toString(8)} ${info.uid}:${info.gid} ${what}`;
    if (info.isDirectory()) for (const name of readdirSync(full)) walk(rel === "" ? name : `${rel}/${name}`);
  };
  walk("");
  return out;
}

/** Names and contents of an archive, as the sandbox would receive them. */
async function unpack(stream: Readable): Promise<{ name: string; text: string }[]> {
  const out: { name: string; text: string }[] = [];
  const ex = extract();
  stream.pipe(ex);
  for await (const entry of ex) {
    let text = entry.header.linkname ?? "";
    for await (const chunk of entry) text += (chunk as Buffer).toString();
    out.push({ name: entry.header.name, text });
  }
  return out;
}

async function packAll(plan: WorkspaceCopyPlan) {
  const packed = packWorkspace(plan, { uid: 1234, gid: 5678 });
  const [entries] = await Promise.all([unpack(packed.stream), packed.done.catch(() => undefined)]);
  return entries;
}

const noSecret = (text: string) => expect(text).not.toContain(SECRET);

/**
 * Runs one round; a file-system error (the racer moved something away) is no failure, as long as
 * nothing leaked: only assertion failures end the test.
 */
async function round(errors: string[], body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === undefined) throw error;
    errors.push(code);
  }
}

describe("reading the workspace (scan, pack, hash, diff) never follows a swapped parent", () => {
  it("a directory swapped for a symlink right after its lstat is not listed through the link", async () => {
    // Asked after the lstat that found `d` a directory, before it is listed.
    const { ignored, swapped } = swapWhenAsked("d");
    const scan = await scanWorkspace(ws, ignored);
    expect(swapped()).toBe(true);
    expect(scan.entries.map((e) => e.path)).not.toContain("d/only-outside");
    const entries = await packAll({ root: ws, ignored, scan, limitBytes: 1024 ** 2, maxEntries: 100 });
    for (const e of entries) noSecret(`${e.name} ${e.text}`);
    expect(entries.map((e) => e.name)).not.toContain("d/only-outside");
  });

  it("a parent swapped between a symlink's lstat and its readlink does not give the outside link's target", async () => {
    const { ignored, swapped } = swapWhenAsked("d/link");
    const scan = await scanWorkspace(ws, ignored);
    expect(swapped()).toBe(true);
    for (const e of scan.entries) noSecret(`${e.path} ${e.linkname ?? ""}`);
  });

  it("a parent swapped between the scan and packing, hashing or diffing: nothing is read through it", async () => {
    const plan = await planWorkspaceCopy(ws, 1024 ** 2);
    expect(plan.scan.entries.map((e) => e.path)).toContain("d/secret");
    swapD(secrets);
    for (const e of await packAll(plan)) noSecret(e.text);
    const tree = await hostTree(ws, { ...plan.scan, skipped: [] });
    expect(tree.get("d/secret")?.sha256).not.toBe(sha(`${SECRET}\n`));
    noSecret(await renderDiffs([SECRET_CHANGED], ws, new Map([["d/secret", Buffer.from("new\n")]])));
  });

  it("a racer swapping a directory for a symlink never gets outside content into what is read", async () => {
    const leaks = new Set<string>();
    const leaked = (where: string, text: string) => {
      if (text.includes(SECRET)) leaks.add(where);
    };
    const outsideHashes = [sha(`${SECRET}\n`), sha(`${SECRET} 2\n`)];
    const errors: string[] = [];
    const racer = await startSwapRacer(join(ws, "d"), secrets);
    try {
      for (let rounds = 0; rounds < 60; rounds++) {
        await round(errors, async () => {
          const plan = await planWorkspaceCopy(ws, 1024 ** 2);
          for (const e of plan.scan.entries) leaked(`scan: ${e.path}`, `${e.path} ${e.linkname ?? ""}`);
          if (plan.scan.entries.some((e) => e.path === "d/only-outside")) leaks.add("scan: outside name");
          for (const e of await packAll(plan)) leaked(`pack: ${e.name}`, `${e.name} ${e.text}`);
          for (const [path, entry] of await hostTree(ws, plan.scan)) {
            if (outsideHashes.includes(entry.sha256 ?? "")) leaks.add(`hash: ${path}`);
          }
          const diff = await renderDiffs([SECRET_CHANGED], ws, new Map([["d/secret", Buffer.from("new\n")]]));
          leaked("diff: d/secret", diff);
        });
      }
    } finally {
      await racer.stop();
    }
    expect([...leaks].sort()).toEqual([]);
  });
});

async function tarBytes(entries: FixtureEntry[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of tarOf(entries)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Polls (without a time assertion) until `ready` holds; fails after `limit` tries. */
async function until(ready: () => boolean, limit = 2000): Promise<void> {
  for (let i = 0; !ready(); i++) {
    if (i >= limit) throw new Error("condition never held");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("writing the workspace (extract, delete) never writes through a swapped parent", () => {
  it("a parent swapped while a file's content streams in: the file lands where it was checked, nothing outside is removed", async () => {
    const before = snapshot(victim);
    const bytes = await tarBytes([{ name: "d/target.txt", mode: 0o644, content: "x".repeat(1000) }]);
    const source = Readable.from(
      (async function* () {
        yield bytes.subarray(0, 512 + 100);
        // The temp file exists: the parents were checked and the file opened in `d`.
        await until(() => readdirSync(join(ws, "d")).some((n) => n.includes(".harness-")));
        swapD(victim);
        yield bytes.subarray(512 + 100);
      })(),
    );
    const result = await strictExtract(source, { root: ws });
    expect(snapshot(victim)).toEqual(before);
    expect(result.written).toEqual(["d/target.txt"]);
    expect(readFileSync(join(ws, "d.real/target.txt"), "utf8")).toBe("x".repeat(1000));
  });

  it("a racer swapping a directory for a symlink: extract and delete never write, chmod, chown or delete outside", async () => {
    const before = snapshot(victim);
    const entries: FixtureEntry[] = [{ name: "d/", type: "directory", mode: 0o755 }];
    const deletions: string[] = [];
    for (let i = 0; i < 10; i++) {
      entries.push(
        { name: "d/sub/", type: "directory", mode: 0o755 },
        { name: `d/new-${i}.txt`, mode: 0o644, content: "new\n" },
        { name: "d/keep", mode: 0o644, content: "overwritten\n" },
        { name: `d/deep-${i}/er/g`, mode: 0o644, content: "g\n" },
        { name: `d/ln-${i}`, type: "symlink", linkname: "keep" },
      );
      deletions.push(`d/new-${i}.txt`, `d/ln-${i}`, `d/deep-${i}/er/g`, `d/deep-${i}/er`, `d/deep-${i}`);
    }
    deletions.push("d/gone", "d/keep", "d/sub");
    const errors: string[] = [];
    const changed = new Set<string>();
    const racer = await startSwapRacer(join(ws, "d"), victim);
    try {
      for (let rounds = 0; rounds < 30; rounds++) {
        await round(errors, async () => {
          await strictExtract(tarOf(entries), { root: ws, chownTo: { uid: 4321, gid: 4321 } });
          await strictDelete(ws, deletions);
        });
        const now = snapshot(victim);
        for (const key of new Set([...Object.keys(before), ...Object.keys(now)])) {
          if (now[key] !== before[key])
            changed.add(`${key}: ${before[key] ?? "absent"} => ${now[key] ?? "gone"}`);
        }
      }
    } finally {
      await racer.stop();
    }
    expect([...changed].sort()).toEqual([]);
    expect(readdirSync(base).sort()).toEqual(["secrets", "victim", "ws"]);
  });
});
