/**
 * Two commands recovering one interrupted apply at once (issue 32): before the claim, both carried
 * the same committed journal through, racing on its renames, and each reported it finished (one
 * with refusals for what the other had already moved). Now at most one does; the other leaves it.
 */
import { createHash } from "node:crypto";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recoverApplies } from "../../../../src/sandbox/copy/journal/apply-commit.js";
import {
  type ApplyJournal,
  journalDir,
  writeJournal,
} from "../../../../src/sandbox/copy/journal/apply-journal.js";
import { claimJournal } from "../../../../src/sandbox/copy/journal/journal-claim.js";

let scratch: string;
let env: NodeJS.ProcessEnv;
beforeEach(() => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "harness-claim-")));
  env = { XDG_STATE_HOME: join(scratch, "state") };
});
afterEach(() => {
  rmSync(scratch, { recursive: true, force: true });
});

/** A workspace whose apply (20 files rewritten) was killed just after its commit point. */
async function committedApply(): Promise<string> {
  const root = join(scratch, "ws");
  const staging = join(root, ".harness", "apply-x1");
  mkdirSync(staging, { recursive: true });
  writeFileSync(join(staging, ".gitignore"), "*\n");
  const ops: ApplyJournal["ops"] = [];
  for (let i = 0; i < 20; i++) {
    writeFileSync(join(root, `f${i}.txt`), `old ${i}\n`);
    writeFileSync(join(staging, `f${i}`), `new ${i}\n`);
    const sha256 = createHash("sha256").update(`new ${i}\n`).digest("hex");
    ops.push({ kind: "file", path: `f${i}.txt`, staged: `f${i}`, sha256 });
  }
  await writeJournal(
    {
      version: 1,
      id: "x1",
      root,
      staging: "apply-x1",
      madeHarnessDir: true,
      // A process that is gone: pid numbers stop well below this.
      owner: { pid: 2 ** 30, started: "1", host: hostname() },
      state: "committed",
      deletions: [],
      ops,
      refusedPaths: [],
      recheckLinks: [],
    },
    env,
  );
  return root;
}

function contents(root: string): string[] {
  return readdirSync(root)
    .sort()
    .map((name) => `${name}=${readFileSync(join(root, name), "utf8").trim()}`);
}

describe("recovering one interrupted apply from two places at once", () => {
  it("is carried through by at most one of them, and finished by the next", async () => {
    const root = await committedApply();
    const [a, b] = await Promise.all([recoverApplies(env, root), recoverApplies(env, root)]);
    const lines = [...a, ...b].map((r) => r.line);
    expect(lines.length).toBeLessThanOrEqual(1);
    for (const line of lines) expect(line).toMatch(/^finished .*: 20 written, 0 deleted, 0 refused$/);
    // Whoever backed off: the next command finishes it, if the first did not.
    const after = await recoverApplies(env, root);
    expect(lines.length + after.length).toBe(1);
    expect(contents(root)).toEqual(Array.from({ length: 20 }, (_, i) => `f${i}.txt=new ${i}`).sort());
    expect(readdirSync(journalDir(env))).toEqual([]);
  });

  it("a claim whose process is gone counts for nothing, and is removed", async () => {
    mkdirSync(journalDir(env), { recursive: true });
    writeFileSync(
      join(journalDir(env), "x2.claim.dead"),
      JSON.stringify({ pid: 2 ** 30, started: "1", host: hostname() }),
    );
    const claim = await claimJournal("x2", env);
    expect(claim).toBeDefined();
    expect(readdirSync(journalDir(env)).filter((n) => n.endsWith(".dead"))).toEqual([]);
    await claim?.release();
    expect(readdirSync(journalDir(env))).toEqual([]);
  });

  it("a live claim of another keeps this one out", async () => {
    const first = await claimJournal("x3", env);
    expect(first).toBeDefined();
    expect(await claimJournal("x3", env)).toBeUndefined();
    await first?.release();
    const again = await claimJournal("x3", env);
    expect(again).toBeDefined();
    await again?.release();
  });
});
