import { VersionApi } from "@kubernetes/client-node";
import { connectCluster } from "../../src/sandbox/kubernetes/api/kube-client.js";
import {
  KubernetesSandbox,
  type KubernetesSandboxOptions,
} from "../../src/sandbox/kubernetes/kubernetes-sandbox.js";

/**
 * The cluster the Kubernetes tests run on: the kubeconfig in HARNESS_TEST_KUBECONFIG (CI exports the
 * one scripts/ensure-k8s.sh prints). Locally the tests skip without one that answers; in CI (`CI` or
 * HARNESS_REQUIRE_KUBERNETES set) that is a failure, never a silent skip, as docker-available.ts does
 * for Docker.
 */
export const testKubeconfig = process.env["HARNESS_TEST_KUBECONFIG"] || undefined;

/** The namespace ensure-k8s.sh creates (with its `default` ServiceAccount). */
export const TEST_NAMESPACE = "harness";

async function kubernetesProblem(): Promise<string | undefined> {
  if (testKubeconfig === undefined)
    return "HARNESS_TEST_KUBECONFIG is not set (bash scripts/ensure-k8s.sh prints it)";
  try {
    const cluster = connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });
    await cluster.kc.makeApiClient(VersionApi).getCode();
    await cluster.core.readNamespace({ name: TEST_NAMESPACE });
    return undefined;
  } catch (error) {
    return `the cluster in ${testKubeconfig} does not answer: ${(error as Error).message}`;
  }
}

export function kubernetesRequired(): boolean {
  return Boolean(process.env["CI"] || process.env["HARNESS_REQUIRE_KUBERNETES"]);
}

export const kubernetesUnavailable = await kubernetesProblem();
if (kubernetesUnavailable !== undefined && kubernetesRequired()) {
  throw new Error(
    `a Kubernetes cluster is required (CI or HARNESS_REQUIRE_KUBERNETES is set): ${kubernetesUnavailable}`,
  );
}
export const skipKubernetes = kubernetesUnavailable !== undefined;

/** The test cluster's namespace, as harness connects to it. */
export const testCluster = () => connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });

/** A sandbox of `workspace` on the test cluster. */
export const openTestSandbox = (workspace: string, extra: Partial<KubernetesSandboxOptions> = {}) =>
  KubernetesSandbox.open({ workspace, kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE, ...extra });
