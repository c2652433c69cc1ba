import { describe } from "vitest";
import { connectCluster } from "../../src/sandbox/kubernetes/api/kube-client.js";
import { nodePidsLimits } from "../../src/sandbox/kubernetes/kubernetes-doctor.js";
import { KubernetesSandbox } from "../../src/sandbox/kubernetes/kubernetes-sandbox.js";
import { conformanceSuite } from "../support/conformance.js";
import { skipKubernetes, TEST_NAMESPACE, testKubeconfig } from "../support/kubernetes-available.js";

/**
 * The conformance set on the Kubernetes engine: one pod per sandbox on the cluster in
 * HARNESS_TEST_KUBECONFIG (scripts/ensure-k8s.sh in CI, where a missing cluster fails).
 */
const pidsLimits = skipKubernetes
  ? []
  : [
      ...(
        await nodePidsLimits(connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE }))
      ).values(),
    ];
/** Why the fork bomb is not run: a node that does not limit a pod's processes, or cannot say. */
const noPidsLimit = pidsLimits
  .map((limit) =>
    limit === undefined
      ? "the node's kubelet sets no podPidsLimit"
      : typeof limit === "object"
        ? `the node's podPidsLimit cannot be read (${limit.unknown})`
        : undefined,
  )
  .find((why) => why !== undefined);

describe.skipIf(skipKubernetes)("Kubernetes (one pod per sandbox)", () => {
  conformanceSuite(
    "kubernetes",
    (workspace, extra) =>
      KubernetesSandbox.open({
        workspace,
        kubeconfig: testKubeconfig,
        namespace: TEST_NAMESPACE,
        ...extra,
        // The engine has only copy isolation; "bind mode" below says why.
        isolation: "copy",
      }),
    {
      timeoutMs: 240_000,
      differences: {
        "bind mode":
          "a cluster's node cannot mount this machine's directory: the workspace is always copied (--isolation bind is refused)",
        ...(noPidsLimit === undefined
          ? {}
          : {
              "fork bomb then next call": `${noPidsLimit}, and a pod has no pids limit of its own: a fork bomb would be bounded only by memory, on a machine other work shares`,
            }),
      },
    },
  );
});
