import { describe, expect, it } from "vitest";
import {
  copyLabels,
  type OwnerIdentity,
  ownerIdentity,
} from "../../../../../src/sandbox/docker/isolation/copy-container-labels.js";
import { isOrphanedCopy } from "../../../../../src/sandbox/docker/isolation/orphaned-copies.js";

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
