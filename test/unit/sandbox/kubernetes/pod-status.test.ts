import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { statusEnd } from "../../../../src/sandbox/kubernetes/api/pod-exec.js";
import { startVerdict } from "../../../../src/sandbox/kubernetes/pod/pod-lifecycle.js";

const status = (s: object) => Buffer.from(JSON.stringify(s));

describe("statusEnd: the exec's status channel", () => {
  it("Success is exit 0; NonZeroExitCode carries its code", () => {
    expect(statusEnd(status({ status: "Success" }))).toEqual({ exitCode: 0 });
    expect(
      statusEnd(
        status({
          status: "Failure",
          reason: "NonZeroExitCode",
          details: { causes: [{ reason: "ExitCode", message: "3" }] },
        }),
      ),
    ).toEqual({ exitCode: 3 });
  });

  it("anything else has no exit code, only its message", () => {
    expect(statusEnd(status({ status: "Failure", message: "container not found" }))).toEqual({
      exitCode: undefined,
      error: "container not found",
    });
    expect(statusEnd(Buffer.from("{not json")).exitCode).toBeUndefined();
    expect(
      statusEnd(
        status({
          status: "Failure",
          reason: "NonZeroExitCode",
          details: { causes: [{ reason: "ExitCode", message: "x" }] },
        }),
      ).exitCode,
    ).toBeUndefined();
  });
});

describe("startVerdict: where a starting pod is", () => {
  const pod = (status: NonNullable<V1Pod["status"]>): V1Pod => ({ status });

  it("running once the sandbox container runs", () => {
    expect(startVerdict(pod({ phase: "Running", containerStatuses: [running("sandbox")] }))).toEqual({
      kind: "running",
    });
  });

  it("a failed setup fails with its reason", () => {
    const verdict = startVerdict(
      pod({
        phase: "Pending",
        initContainerStatuses: [
          {
            name: "setup",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: {
              terminated: { exitCode: 3, message: "the pod has network interfaces besides lo: eth0" },
            },
          },
        ],
      }),
    );
    expect(verdict).toEqual({
      kind: "failed",
      why: "its setup failed: the pod has network interfaces besides lo: eth0",
    });
  });

  it("an image the node cannot get fails at once, with a hint", () => {
    const verdict = startVerdict(
      pod({
        phase: "Pending",
        containerStatuses: [
          {
            name: "sandbox",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: "ErrImageNeverPull", message: "image not present" } },
          },
        ],
      }),
    );
    expect(verdict.kind).toBe("failed");
    expect(verdict.kind === "failed" && verdict.why).toMatch(/ErrImageNeverPull.*must have the image/);
  });

  it("pending and unscheduled pods are waiting, with why", () => {
    expect(startVerdict(pod({ phase: "Pending" }))).toEqual({ kind: "waiting", why: "phase Pending" });
    const unscheduled = startVerdict(
      pod({
        phase: "Pending",
        conditions: [{ type: "PodScheduled", status: "False", message: "0/1 nodes available" }],
      }),
    );
    expect(unscheduled).toEqual({ kind: "waiting", why: "not scheduled: 0/1 nodes available" });
  });
});

function running(name: string) {
  return { name, image: "i", imageID: "", ready: true, restartCount: 0, state: { running: {} } };
}
