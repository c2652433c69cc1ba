import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CleanupEngine,
  claimRecord,
  readRecord,
  recordCreated,
  recoverAbandoned,
  removeRecorded,
} from "../../../bench/peers/created-record.js";

const IMAGE = "harness-sandbox:abc";
const id = (c: string) => c.repeat(64);

interface FakeContainer {
  Id: string;
  Image: string;
  Labels: Record<string, string>;
}

/**
 * An engine that holds containers, volumes and networks, lists them as the real one does, and
 * answers a removal of something it does not hold with 404. `conflicts` answers 409 that many times
 * first (a removal already under way).
 */
class FakeEngine implements CleanupEngine {
  containers = new Map<string, FakeContainer>();
  volumes = new Set<string>();
  networks = new Set<string>();
  removals: string[] = [];
  conflicts = new Map<string, number>();

  listContainers(): Promise<FakeContainer[]> {
    return Promise.resolve([...this.containers.values()]);
  }

  private remove(what: string, held: { delete(key: string): boolean }, key: string): Promise<unknown> {
    const left = this.conflicts.get(key) ?? 0;
    if (left > 0) {
      this.conflicts.set(key, left - 1);
      return Promise.reject(Object.assign(new Error("removal already in progress"), { statusCode: 409 }));
    }
    if (!held.delete(key)) return Promise.reject(Object.assign(new Error("no such"), { statusCode: 404 }));
    this.removals.push(`${what} ${key}`);
    return Promise.resolve();
  }

  getContainer(key: string) {
    return { remove: () => this.remove("container", this.containers, key) };
  }

  getVolume(key: string) {
    return { remove: () => this.remove("volume", this.volumes, key) };
  }

  getNetwork(key: string) {
    return { remove: () => this.remove("network", this.networks, key) };
  }
}

let dir = "";
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = "";
});

describe("the peer bench's cleanup", () => {
  it("removes exactly what was recorded: a foreign container on the same image, made during the run, survives", async () => {
    dir = mkdtempSync(join(tmpdir(), "created-record-"));
    const engine = new FakeEngine();
    // Another user's container, unlabelled, on harness's image, made while the bench ran.
    engine.containers.set(id("f"), { Id: id("f"), Image: IMAGE, Labels: {} });
    for (const c of ["a", "b"]) engine.containers.set(id(c), { Id: id(c), Image: IMAGE, Labels: {} });
    engine.volumes.add("epicbox-1");
    engine.networks.add(id("n"));
    const driver = join(dir, "mini-0");
    mkdirSync(driver);
    recordCreated(dir, "network", id("n"));
    recordCreated(driver, "container", id("a"));
    recordCreated(driver, "volume", "epicbox-1");
    writeFileSync(join(driver, "x.cid"), `${id("b")}\n`); // what `docker run --cidfile` writes
    writeFileSync(join(driver, "y.cid"), ""); // a create that failed
    writeFileSync(join(dir, "owner"), "1 2\n");

    const cleanup = await removeRecorded(engine, readRecord(dir));

    expect([...engine.containers.keys()]).toEqual([id("f")]);
    expect(engine.volumes.size).toBe(0);
    expect(engine.networks.size).toBe(0);
    expect(cleanup.failed).toEqual([]);
    // Containers before the volume and the network they may still use.
    expect(engine.removals.map((r) => r.split(" ")[0])).toEqual([
      "container",
      "container",
      "volume",
      "network",
    ]);
  });

  it("counts what its maker already removed as gone, and asks again while a removal is under way", async () => {
    dir = mkdtempSync(join(tmpdir(), "created-record-"));
    const engine = new FakeEngine();
    engine.containers.set(id("a"), { Id: id("a"), Image: IMAGE, Labels: {} });
    engine.conflicts.set(id("a"), 2);
    recordCreated(dir, "container", id("a"));
    recordCreated(dir, "container", id("g")); // removed by the peer itself

    const cleanup = await removeRecorded(engine, readRecord(dir), { retryMs: 1 });

    expect(cleanup.removed.map((c) => c.id)).toEqual([id("a")]);
    expect(cleanup.gone.map((c) => c.id)).toEqual([id("g")]);
    expect(cleanup.failed).toEqual([]);
  });

  it("reports a removal that keeps failing, and never records what is not an engine id", async () => {
    dir = mkdtempSync(join(tmpdir(), "created-record-"));
    const engine = new FakeEngine();
    engine.containers.set(id("a"), { Id: id("a"), Image: IMAGE, Labels: {} });
    engine.conflicts.set(id("a"), 5);
    recordCreated(dir, "container", id("a"));
    const cleanup = await removeRecorded(engine, readRecord(dir), { attempts: 3, retryMs: 1 });
    expect(cleanup.failed.map((c) => c.id)).toEqual([id("a")]);
    expect(engine.containers.has(id("a"))).toBe(true);
    expect(() => recordCreated(dir, "container", "../escape")).toThrow(/not an engine id/);
  });

  it("cleans an earlier run's record only once its owner is gone, and never another prefix's", async () => {
    dir = mkdtempSync(join(tmpdir(), "created-record-"));
    const engine = new FakeEngine();
    for (const c of ["a", "b", "c"]) engine.containers.set(id(c), { Id: id(c), Image: IMAGE, Labels: {} });
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    });
    const records = {
      mine: "peers-record-1",
      abandoned: "peers-record-2",
      unowned: "peers-record-3",
      other: "x-1",
    };
    for (const [name, c] of [
      [records.mine, "a"],
      [records.abandoned, "b"],
      [records.other, "c"],
    ] as const) {
      mkdirSync(join(dir, name));
      recordCreated(join(dir, name), "container", id(c));
    }
    mkdirSync(join(dir, records.unowned));
    claimRecord(join(dir, records.mine)); // this test's process: alive
    writeFileSync(join(dir, records.abandoned, "owner"), `${dead.stdout} 1\n`);
    writeFileSync(join(dir, records.other, "owner"), `${dead.stdout} 1\n`);

    const done = await recoverAbandoned(engine, dir, "peers-record-");

    expect(done).toHaveLength(1);
    expect([...engine.containers.keys()].sort()).toEqual([id("a"), id("c")]);
    expect(existsSync(join(dir, records.abandoned))).toBe(false);
    expect(existsSync(join(dir, records.mine))).toBe(true);
    expect(existsSync(join(dir, records.unowned))).toBe(true);
  });
});
