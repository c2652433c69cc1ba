/**
 * After a command's exec connection ended, harness asks the API server what became of the pod. Only
 * the API server's 404 means the pod (and its copy of the workspace) is gone; an API server that does
 * not answer must not be taken for a deleted pod (it once was: the run ended saying the copy was lost).
 */
import { describe, expect, it } from "vitest";
import { EngineGoneError, SandboxError } from "../../../../src/errors.js";
import type { Cluster } from "../../../../src/sandbox/kubernetes/api/kube-client.js";
import { podLost } from "../../../../src/sandbox/kubernetes/pod/pod-lifecycle.js";

function cluster(read: () => Promise<unknown>): Cluster {
  return { core: { readNamespacedPod: read }, namespace: "harness" } as unknown as Cluster;
}

/** client-node's error for an HTTP answer: the status as a number in `code`. */
const answered = (code: number, message: string) => Object.assign(new Error(message), { code, body: "" });
/** A request that never got an answer: the socket's code as a string. */
const refused = () =>
  Object.assign(
    new Error("request to https://127.0.0.1:6443/api/v1/… failed, reason: connect ECONNREFUSED"),
    {
      code: "ECONNREFUSED",
    },
  );

describe("podLost", () => {
  it("calls the pod deleted on the API server's 404 only", async () => {
    expect(
      await podLost(
        cluster(() => Promise.reject(answered(404, "not found"))),
        "p",
      ),
    ).toBe("the sandbox pod was deleted");
  });

  it("says the API server did not answer, as EngineGoneError, when it is not there", async () => {
    const error = await podLost(
      cluster(() => Promise.reject(refused())),
      "p",
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineGoneError);
    expect((error as Error).message).toMatch(
      /^the Kubernetes API server did not answer \(.*ECONNREFUSED\).*the pod, with its copy of the workspace, may still be there$/,
    );
    expect((error as Error).message).not.toContain("deleted");
  });

  it("keeps another answer as a SandboxError that does not call the pod deleted", async () => {
    const error = await podLost(
      cluster(() => Promise.reject(answered(500, "etcd timeout"))),
      "p",
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxError);
    expect(error).not.toBeInstanceOf(EngineGoneError);
    expect((error as Error).message).not.toContain("deleted");
  });

  it("is undefined for a pod that is there and running", async () => {
    const pod = {
      metadata: {},
      status: { containerStatuses: [{ name: "sandbox", state: { running: {} } }] },
    };
    expect(
      await podLost(
        cluster(() => Promise.resolve(pod)),
        "p",
      ),
    ).toBeUndefined();
  });
});
