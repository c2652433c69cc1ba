/**
 * Reaching a cluster: the kubeconfig read as kubectl reads it (KUBECONFIG, a list of files, else
 * ~/.kube/config, else the in-cluster service account), or one file named outright (tests, CI's
 * HARNESS_TEST_KUBECONFIG), then `--kube-context` over its current context.
 */
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { ConfigError } from "../../../errors.js";

/** The namespace pods go to when none is named. */
export const DEFAULT_NAMESPACE = "harness";

export interface ClusterOptions {
  /** A kubeconfig file instead of kubectl's search. */
  kubeconfig?: string | undefined;
  /** A context of the kubeconfig instead of its current one. */
  kubeContext?: string | undefined;
  /** Default `DEFAULT_NAMESPACE`. */
  namespace?: string | undefined;
}

export interface Cluster {
  kc: KubeConfig;
  core: CoreV1Api;
  namespace: string;
  /** The API server's address, for messages. */
  server: string;
  context: string;
}

export function connectCluster(options: ClusterOptions): Cluster {
  const kc = new KubeConfig();
  try {
    if (options.kubeconfig) kc.loadFromFile(options.kubeconfig);
    else kc.loadFromDefault();
  } catch (error) {
    throw new ConfigError(`cannot read the kubeconfig: ${(error as Error).message}`, { cause: error });
  }
  if (options.kubeContext !== undefined) {
    if (!kc.getContextObject(options.kubeContext)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new ConfigError(
        `--kube-context ${options.kubeContext}: no such context in the kubeconfig (it has: ${known.join(", ") || "none"})`,
      );
    }
    kc.setCurrentContext(options.kubeContext);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new ConfigError(
      "no Kubernetes cluster is configured: set KUBECONFIG (or ~/.kube/config) or pass --kube-context",
    );
  }
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    namespace: options.namespace ?? DEFAULT_NAMESPACE,
    server: cluster.server,
    context: kc.getCurrentContext(),
  };
}

/** The HTTP status of a client-node error (ApiException), if it has one. */
export function apiStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "number" ? code : undefined;
}

/** The message the API server gave (its Status body), else the error's own. */
export function apiMessage(error: unknown): string {
  const body = (error as { body?: unknown } | undefined)?.body;
  if (typeof body === "string") {
    try {
      const parsed = JSON.parse(body) as { message?: string };
      if (parsed.message) return parsed.message;
    } catch {
      // not JSON: fall through
    }
  }
  if (body && typeof body === "object" && "message" in body)
    return String((body as { message: unknown }).message);
  return (error as Error).message;
}
