import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { takeLease } from "../../../src/state/container-leases.js";

const dirs: string[] = [];
function stateHome(): NodeJS.ProcessEnv {
  const dir = mkdtempSync(join(tmpdir(), "harness-leases-"));
  dirs.push(dir);
  return { XDG_STATE_HOME: dir };
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A pid that was alive a moment ago and is not now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
  return Number(child.stdout.trim());
}

describe("container leases", () => {
  it("sees no one else when alone, and leaves nothing behind", async () => {
    const env = stateHome();
    const lease = await takeLease("abc", env);
    expect(await lease.othersAlive()).toBe(false);
    await lease.release();
    expect(readdirSync(join(env["XDG_STATE_HOME"] ?? "", "harness", "leases"))).toEqual([]);
  });

  it("sees another live process's lease, and not a dead one's (which it removes)", async () => {
    const env = stateHome();
    const dir = join(env["XDG_STATE_HOME"] ?? "", "harness", "leases", "abc");
    mkdirSync(dir, { recursive: true });
    const dead = `${deadPid()}-1`;
    writeFileSync(join(dir, dead), "");
    const lease = await takeLease("abc", env);
    expect(await lease.othersAlive()).toBe(false);
    expect(readdirSync(dir)).not.toContain(dead);
    // PID 1 is alive; a start time of 0 means "could not tell", which counts as alive.
    writeFileSync(join(dir, "1-0"), "");
    expect(await lease.othersAlive()).toBe(true);
    // A reused pid: alive, but started at another time.
    rmSync(join(dir, "1-0"));
    writeFileSync(join(dir, "1-999999999999"), "");
    expect(await lease.othersAlive()).toBe(false);
    await lease.release();
  });

  it("keeps leases of different containers apart", async () => {
    const env = stateHome();
    const a = await takeLease("aaa", env);
    const b = await takeLease("bbb", env);
    expect(await a.othersAlive()).toBe(false);
    await a.release();
    await b.release();
  });
});
