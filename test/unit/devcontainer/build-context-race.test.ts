/**
 * Round 4, finding 1, raced: a process on the host (as able as any task, and faster) swaps a folder
 * or a file of the build context for a symlink to a root-only folder or file outside the workspace
 * and back, in a tight loop, while the context is read again and again. Counted over every read:
 * the outside content is never read, whichever way each read met the racer.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/errors.js";
import { readBuildContext } from "../../../src/sandbox/docker/devcontainer/build-context.js";
import { startSwapRacer } from "../sandbox/host/path-swap-racer.js";

const SECRET = "TOP SECRET host content";
/** Reads per case; the old reader leaked within a few hundred (a folder) and a few dozen (the context). */
const ROUNDS = 500;
const OWNER = process.getuid?.() === 0 ? "1000:1000" : `${process.getuid?.()}:${process.getgid?.()}`;

let base: string;
let ws: string;
let secrets: string;
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "harness-devc-race-")));
  ws = join(base, "ws");
  secrets = join(base, "secrets");
  mkdirSync(join(ws, "ctx", "d"), { recursive: true });
  writeFileSync(join(ws, "ctx", "Dockerfile"), "FROM x\n");
  writeFileSync(join(ws, "ctx", "d", "secret"), "inside\n");
  writeFileSync(join(ws, "ctx", "f"), "inside\n");
  mkdirSync(secrets);
  // World-readable, so the owner check cannot be what keeps it out: only never following a link.
  writeFileSync(join(secrets, "secret"), `${SECRET}\n`, { mode: 0o644 });
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** Reads the context ROUNDS times against a racer on `path`; tallies how each read went. */
async function race(path: string, target: string): Promise<Record<string, number>> {
  const tally: Record<string, number> = {};
  const count = (key: string) => {
    tally[key] = (tally[key] ?? 0) + 1;
  };
  const build = {
    workspace: ws,
    context: join(ws, "ctx"),
    dockerfile: join(ws, "ctx", "Dockerfile"),
    args: {},
  };
  const racer = await startSwapRacer(path, target);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      try {
        const context = await readBuildContext(build, OWNER);
        for (const entry of context.entries) {
          if (entry.type === "file") expect(entry.content.toString()).not.toContain(SECRET);
        }
        const links = context.entries.filter((e) => e.type === "symlink");
        count(links.length > 0 ? "packed the link as a link" : "read before or after a swap");
      } catch (error) {
        if (error instanceof ConfigError) count("refused: changed while read");
        else if ((error as NodeJS.ErrnoException).code !== undefined)
          count(`file system: ${(error as NodeJS.ErrnoException).code}`);
        else throw error;
      }
    }
  } finally {
    await racer.stop();
  }
  return tally;
}

describe("the build context against a racer swapping it for links to the host", () => {
  it("a folder inside the context ↔ a link to a host folder", { timeout: 120_000 }, async () => {
    const tally = await race(join(ws, "ctx", "d"), secrets);
    // Every read is accounted for, and the racer was met (a read saw its link or was refused).
    expect(Object.values(tally).reduce((a, b) => a + b, 0)).toBe(ROUNDS);
    expect(
      (tally["packed the link as a link"] ?? 0) + (tally["refused: changed while read"] ?? 0),
    ).toBeGreaterThan(0);
  });

  it("a file inside the context ↔ a link to a host file", { timeout: 120_000 }, async () => {
    const tally = await race(join(ws, "ctx", "f"), join(secrets, "secret"));
    expect(Object.values(tally).reduce((a, b) => a + b, 0)).toBe(ROUNDS);
    expect(tally["packed the link as a link"] ?? 0, JSON.stringify(tally)).toBeGreaterThan(0);
  });

  it("the context folder itself ↔ a link to a host folder", { timeout: 120_000 }, async () => {
    writeFileSync(join(secrets, "Dockerfile"), "FROM host\n");
    const tally = await race(join(ws, "ctx"), secrets);
    expect(Object.values(tally).reduce((a, b) => a + b, 0)).toBe(ROUNDS);
    expect(tally["refused: changed while read"] ?? 0, JSON.stringify(tally)).toBeGreaterThan(0);
  });
});
