/**
 * Reaching a cluster: the kubeconfig read as kubectl reads it (KUBECONFIG, a list of files, else
 * ~/.kube/config, else the in-cluster service account), or one file named outright (tests, CI's
 * HARNESS_TEST_KUBECONFIG), then `--kube-context` over its current context.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
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

/** Where a pod's service account token is: client-node's last place to look before its made-up default. */
const SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/**
 * Whether kubectl's search would find a kubeconfig. Without one, client-node makes up a cluster at
 * http://localhost:8080 and every call fails with "HTTP protocol is not allowed…", which says
 * nothing of the missing file.
 */
export function defaultKubeconfigFound(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env["KUBECONFIG"]) return true;
  const home = env["HOME"] || homedir();
  return existsSync(join(home, ".kube", "config")) || existsSync(SERVICE_ACCOUNT_TOKEN);
}

export function connectCluster(options: ClusterOptions, env: NodeJS.ProcessEnv = process.env): Cluster {
  const kc = new KubeConfig();
  if (!options.kubeconfig && !defaultKubeconfigFound(env)) {
    throw new ConfigError(
      "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist: export KUBECONFIG=/path/to/kubeconfig (the file kubectl uses for the cluster)",
    );
  }
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
  // client-node refuses plain HTTP unless TLS checks are off, with a message naming neither.
  if (cluster.server.startsWith("http:") && !cluster.skipTLSVerify) {
    throw new ConfigError(
      `the kubeconfig's cluster '${cluster.name}' (context ${kc.getCurrentContext()}) is at ${cluster.server}, plain HTTP, which the Kubernetes client refuses: give the API server's https:// address`,
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
