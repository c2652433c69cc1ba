/** The kept pod's state as `harness ps` shows it, and when an idle one is old enough to delete. */
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { LABEL_OWNER_HOST, LABEL_OWNER_PID } from "../../../../src/sandbox/docker/container/labels.js";
import {
  ANNOTATION_IDLE_SINCE,
  KEPT_IDLE_MS,
  keptIdleTooLong,
  keptManifest,
  keptState,
  LABEL_KEPT,
} from "../../../../src/sandbox/kubernetes/pod/kept-pod.js";
import { podConfigHash, podManifest } from "../../../../src/sandbox/kubernetes/pod/pod-spec.js";

const settings = {
  namespace: "harness",
  image: "harness-sandbox:test",
  workspace: "/work/project",
  workdir: "/workspace",
  user: "1000:1000",
  network: "none" as const,
  memoryBytes: 1024 ** 3,
  cpus: 1,
  tmpSizeMiB: 64,
  homeSizeMiB: 64,
};

const now = Date.parse("2026-12-02T12:00:00Z");

function kept(annotations: Record<string, string>): V1Pod {
  return { metadata: { labels: { [LABEL_KEPT]: "true" }, annotations } };
}

describe("the kept pod", () => {
  it("is harness's manifest labelled kept, with the same config hash", () => {
    const pod = keptManifest(settings, "p", "s");
    expect(pod.metadata?.labels?.[LABEL_KEPT]).toBe("true");
    expect(pod.spec).toEqual(podManifest(settings, "p", "s").spec);
    expect(pod.metadata?.annotations?.["dev.harness.config-hash"]).toBe(podConfigHash(settings));
  });

  it("says who holds it, or how long it has been idle", () => {
    const held = kept({ [LABEL_OWNER_PID]: "4242", [LABEL_OWNER_HOST]: "box" });
    expect(keptState(held, now)).toBe("kept, in use by pid 4242 on box");
    const idle = kept({ [ANNOTATION_IDLE_SINCE]: "2026-12-02T11:55:00Z" });
    expect(keptState(idle, now)).toBe("kept, idle 5 min (deleted after 30)");
    expect(keptState({ metadata: { labels: {} } }, now)).toBeUndefined();
  });

  it("is old enough to delete only once idle past the timeout; a held one never", () => {
    const idleFor = (ms: number) => kept({ [ANNOTATION_IDLE_SINCE]: new Date(now - ms).toISOString() });
    expect(keptIdleTooLong(idleFor(KEPT_IDLE_MS - 1000), now)).toBe(false);
    expect(keptIdleTooLong(idleFor(KEPT_IDLE_MS + 1000), now)).toBe(true);
    expect(keptIdleTooLong(kept({}), now)).toBe(false);
    // A time nobody can read is no reason to keep a pod for ever.
    expect(keptIdleTooLong(kept({ [ANNOTATION_IDLE_SINCE]: "yesterday-ish" }), now)).toBe(true);
  });
});
