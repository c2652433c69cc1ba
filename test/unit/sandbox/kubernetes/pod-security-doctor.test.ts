/**
 * The Pod Security check's verdicts, against a fake API (the real cluster's restricted and baseline
 * namespaces are in test/e2e/kubernetes-refusals.test.ts): the dry run decides when it can be made,
 * the labels when it cannot.
 */
import { describe, expect, it } from "vitest";
import type { Cluster } from "../../../../src/sandbox/kubernetes/api/kube-client.js";
import { podSecurityCheck } from "../../../../src/sandbox/kubernetes/pod-security-doctor.js";

const RESTRICTED_REFUSAL =
  'pods "p" is forbidden: violates PodSecurity "restricted:latest": runAsUser=0 (container "sandbox" must not set runAsUser=0)';

/** An API error as client-node throws it. */
const apiError = (code: number, message: string) =>
  Object.assign(new Error("HTTP"), { code, body: { message } });

function cluster(api: { labels?: Record<string, string> | Error; create?: Error }): Cluster {
  return {
    namespace: "ns",
    core: {
      readNamespace: async () => {
        if (api.labels instanceof Error) throw api.labels;
        return { metadata: { labels: api.labels ?? {} } };
      },
      createNamespacedPod: async (request: { dryRun?: string }) => {
        expect(request.dryRun).toBe("All");
        if (api.create) throw api.create;
        return {};
      },
    },
  } as unknown as Cluster;
}

const pod = async () => ({ metadata: { name: "p" } });
const noPod = async (): Promise<never> => {
  throw new Error("workspace '/x' is owned by root");
};
const enforce = (level: string) => ({ "pod-security.kubernetes.io/enforce": level });

describe("harness doctor's Pod Security check", () => {
  it("fails on the dry run's refusal, quoting it, with the fix", async () => {
    const check = await podSecurityCheck(
      cluster({ labels: enforce("restricted"), create: apiError(403, RESTRICTED_REFUSAL) }),
      pod,
    );
    expect(check).toMatchObject({ name: "pod security ns", status: "fail" });
    expect(check.detail).toBe(
      `enforce=restricted; a dry run of harness's pod was refused: ${RESTRICTED_REFUSAL}`,
    );
    expect(check.fix).toContain(
      "kubectl label namespace ns pod-security.kubernetes.io/enforce=baseline --overwrite",
    );
  });

  it("is ok when the dry run is admitted, and names warn and audit levels", async () => {
    const check = await podSecurityCheck(
      cluster({
        labels: { ...enforce("baseline"), "pod-security.kubernetes.io/warn": "restricted" },
      }),
      pod,
    );
    expect(check).toEqual({
      name: "pod security ns",
      status: "ok",
      detail: "enforce=baseline, warn=restricted; a dry run of harness's pod was admitted",
    });
  });

  it("goes by the labels when no dry run can be made: restricted fails, baseline passes, unreadable warns", async () => {
    const noCreate = apiError(
      403,
      'pods is forbidden: User "u" cannot create resource "pods" in the namespace "ns"',
    );
    const restricted = await podSecurityCheck(
      cluster({ labels: enforce("restricted"), create: noCreate }),
      pod,
    );
    expect(restricted.status).toBe("fail");
    expect(restricted.detail).toBe(
      "enforce=restricted: every harness pod will be refused (no dry run: the kubeconfig's user may not create pods)",
    );
    expect((await podSecurityCheck(cluster({ labels: enforce("baseline") }), noPod)).status).toBe("ok");
    const unknown = await podSecurityCheck(
      cluster({ labels: apiError(403, "namespaces is forbidden"), create: noCreate }),
      pod,
    );
    expect(unknown.status).toBe("warn");
    expect(unknown.detail).toContain("labels not readable (namespaces is forbidden)");
  });
});
