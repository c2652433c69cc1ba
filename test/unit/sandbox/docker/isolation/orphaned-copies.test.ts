import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import {
  type KeptCopyRecord,
  readKeptCopy,
  writeKeptCopy,
} from "../../../../../src/sandbox/copy/kept/kept-copy-record.js";
import {
  copyLabels,
  type OwnerIdentity,
  ownerIdentity,
} from "../../../../../src/sandbox/docker/isolation/labels/copy-container-labels.js";
import {
  isOrphanedCopy,
  KEPT_COPY_RETENTION_DAYS,
  orphanVerdict,
  sweepOrphanedCopies,
} from "../../../../../src/sandbox/docker/isolation/orphaned-copies.js";

const here: OwnerIdentity = { host: "box 0123abcd", bootId: "boot-1", pidNs: "pid:[4026531836]", pid: 100 };
const labels = (owner: Partial<OwnerIdentity>, isolation = "copy") => ({
  "dev.harness.managed": "true",
  "dev.harness.isolation": isolation,
  "dev.harness.owner-host": owner.host ?? here.host,
  "dev.harness.owner-boot-id": owner.bootId ?? here.bootId,
  "dev.harness.owner-pid-ns": owner.pidNs ?? here.pidNs,
  "dev.harness.owner-pid": String(owner.pid ?? 4242),
});
const alive = (pid: number) => pid === 100 || pid === 4243;

describe("isOrphanedCopy", () => {
  it("is stale when its owner pid is no process on this host in the same boot", () => {
    expect(isOrphanedCopy(labels({ pid: 4242 }), here, alive)).toBe(true);
    expect(isOrphanedCopy(labels({ pid: 4243 }), here, alive)).toBe(false);
    expect(isOrphanedCopy(labels({ pid: 100 }), here, alive)).toBe(false);
  });

  it("is stale after a reboot whatever the pid, since every process of that boot is gone", () => {
    expect(isOrphanedCopy(labels({ bootId: "boot-0", pid: 4243 }), here, alive)).toBe(true);
  });

  it("is never judged for another host, another pid namespace, bind mode, or without owner labels", () => {
    expect(isOrphanedCopy(labels({ host: "other 99", bootId: "boot-9" }), here, alive)).toBe(false);
    expect(isOrphanedCopy(labels({ pidNs: "pid:[1]" }), here, alive)).toBe(false);
    expect(isOrphanedCopy(labels({}, "bind"), here, alive)).toBe(false);
    expect(isOrphanedCopy({ "dev.harness.isolation": "copy" }, here, alive)).toBe(false);
  });

  it("labels a copy-mode container with this process as its owner, which is alive", () => {
    const own = copyLabels("/ws", "hash", "session");
    expect(own["dev.harness.owner-pid"]).toBe(String(process.pid));
    expect(own["dev.harness.owner-host"]).toBe(ownerIdentity().host);
    expect(isOrphanedCopy(own)).toBe(false);
  });
});

const DAY = 24 * 3600;
const NOW = Date.parse("2026-12-02T12:00:00Z");
const states: string[] = [];
afterAll(() => {
  for (const dir of states) rmSync(dir, { recursive: true, force: true });
});

function record(id: string, state: KeptCopyRecord["state"]): KeptCopyRecord {
  return {
    version: 1,
    id,
    command: "exec",
    root: "/ws",
    workdir: "/workspace",
    createdAt: new Date(NOW).toISOString(),
    state,
    owner: { pid: 4242 },
    limitBytes: 1024,
    maxEntries: 10,
    protect: {},
  };
}

/** A hand-built engine: the listed containers, and what the sweep did to each. */
function fakeDocker(containers: { id: string; copyId?: string; ageDays: number; state?: string }[]) {
  // Made on this machine by a process of an earlier boot: orphaned whatever its pid.
  const owner = { ...ownerIdentity(), bootId: "an earlier boot" };
  const done: string[] = [];
  const docker = {
    listContainers: async () =>
      containers.map((c) => ({
        Id: c.id,
        Created: NOW / 1000 - c.ageDays * DAY,
        State: c.state ?? "exited",
        Labels: {
          ...labels(owner),
          "dev.harness.workspace": "copy:/ws",
          ...(c.copyId === undefined ? {} : { "dev.harness.copy-id": c.copyId }),
        },
      })),
    getContainer: (id: string) => ({
      id,
      remove: async () => done.push(`removed ${id}`),
      stop: async () => done.push(`stopped ${id}`),
    }),
  } as unknown as Docker;
  return { docker, done };
}

describe("the orphan sweep: kept copies stay until they land, are dropped, or pass retention", () => {
  it("decides by the record and the age", () => {
    const labelled = { "dev.harness.copy-id": "exec-1" };
    const young = NOW / 1000 - DAY;
    const old = NOW / 1000 - (KEPT_COPY_RETENTION_DAYS + 1) * DAY;
    expect(orphanVerdict({}, young, undefined, NOW)).toBe("remove");
    expect(orphanVerdict(labelled, young, record("exec-1", "open"), NOW)).toBe("keep");
    expect(orphanVerdict(labelled, young, undefined, NOW)).toBe("keep");
    expect(orphanVerdict(labelled, young, record("exec-1", "opening"), NOW)).toBe("remove");
    expect(orphanVerdict(labelled, young, record("exec-1", "settled"), NOW)).toBe("remove");
    expect(orphanVerdict(labelled, old, record("exec-1", "open"), NOW)).toBe("expired");
    expect(orphanVerdict(labelled, old, undefined, NOW)).toBe("expired");
  });

  it("removes what holds no work and what is past retention (one line each), keeps and stops the rest", async () => {
    const state = mkdtempSync(join(tmpdir(), "harness-sweep-"));
    states.push(state);
    const env = { XDG_STATE_HOME: state };
    for (const [id, s] of [
      ["kept", "open"],
      ["expired", "open"],
      ["never-ran", "opening"],
      ["settled", "settled"],
    ] as const)
      await writeKeptCopy(record(id, s), { entries: [], skipped: [], totalBytes: 0, notUtf8: [] }, env);
    const { docker, done } = fakeDocker([
      { id: "c-batch", ageDays: 0 },
      { id: "c-kept", copyId: "kept", ageDays: KEPT_COPY_RETENTION_DAYS - 1, state: "running" },
      { id: "c-expired", copyId: "expired", ageDays: KEPT_COPY_RETENTION_DAYS + 1 },
      { id: "c-never-ran", copyId: "never-ran", ageDays: 0 },
      { id: "c-settled", copyId: "settled", ageDays: 0 },
      { id: "c-no-record", copyId: "elsewhere", ageDays: 1 },
    ]);
    const lines: string[] = [];
    const removed = await sweepOrphanedCopies(docker, (line) => lines.push(line), env, NOW);
    expect(removed.sort()).toEqual(["c-batch", "c-expired", "c-never-ran", "c-settled"]);
    expect(done).toContain("stopped c-kept");
    expect(done.filter((d) => d.includes("c-kept") || d.includes("c-no-record"))).toEqual(["stopped c-kept"]);
    expect(lines).toEqual([
      `removed the kept copy expired of /ws: its changes were never applied, and it was older than ${KEPT_COPY_RETENTION_DAYS} days (retention)`,
    ]);
    expect(await readKeptCopy("kept", env)).toBeDefined();
    expect(await readKeptCopy("expired", env)).toBeUndefined();
    expect(await readKeptCopy("settled", env)).toBeUndefined();
  });
});
