/**
 * `harness doctor --engine kubernetes`: the cluster answers, the namespace exists, the kubeconfig's
 * user may create, read, delete and exec into pods there (SelfSubjectAccessReview, asked of the API
 * server itself), the namespace's Pod Security admission lets harness's pod in (its labels, and a
 * dry run of the pod), a node reports the image, the runtime class exists, and the nodes limit a
 * pod's processes (a pod has no pids limit of its own: kubelet's podPidsLimit is the only one).
 */
import { randomUUID } from "node:crypto";
import { type RequestOptions, request } from "node:https";
import { AuthorizationV1Api, NodeV1Api, type V1Pod, VersionApi } from "@kubernetes/client-node";
import type { DoctorCheck } from "../doctor-check.js";
import {
  apiMessage,
  apiStatus,
  type Cluster,
  type ClusterOptions,
  connectCluster,
} from "./api/kube-client.js";
import type { KubernetesSandboxOptions } from "./kubernetes-options.js";
import { podManifest, podName } from "./pod/pod-spec.js";
import { planPod } from "./pod-plan.js";
import { podSecurityCheck } from "./pod-security-doctor.js";

/** What pods need: each verb on pods or a subresource. */
const NEEDED: readonly { verb: string; subresource?: string }[] = [
  { verb: "create" },
  { verb: "get" },
  { verb: "list" },
  { verb: "delete" },
  { verb: "create", subresource: "exec" },
];

export async function kubernetesChecks(
  options: ClusterOptions & {
    image: string;
    runtime?: string | undefined;
    /** The settings of the pod a dry run checks against the namespace's admission (pod-security-doctor.ts). */
    sandbox?: KubernetesSandboxOptions | undefined;
  },
): Promise<DoctorCheck[]> {
  let cluster: Cluster;
  try {
    cluster = connectCluster(options);
  } catch (error) {
    return [
      {
        name: "cluster",
        status: "fail",
        detail: (error as Error).message,
        fix: "set KUBECONFIG or pass --kube-context",
      },
    ];
  }
  const reach = await clusterCheck(cluster);
  if (reach.status === "fail") return [reach];
  // Side by side (each is a round trip or a few), printed in this order.
  const [namespace, rbac, podSecurity, image, runtimeClass, pids] = await Promise.all([
    namespaceCheck(cluster),
    rbacCheck(cluster),
    podSecurityCheck(cluster, () => harnessPod(options)),
    imageCheck(cluster, options.image),
    runtimeClassCheck(cluster, options.runtime),
    pidsChecks(cluster),
  ]);
  return [reach, namespace, rbac, podSecurity, image, runtimeClass, ...pids];
}

async function clusterCheck(cluster: Cluster): Promise<DoctorCheck> {
  try {
    const version = await cluster.kc.makeApiClient(VersionApi).getCode();
    return {
      name: "cluster",
      status: "ok",
      detail: `Kubernetes ${version.gitVersion} at ${cluster.server} (context ${cluster.context})`,
    };
  } catch (error) {
    return {
      name: "cluster",
      status: "fail",
      detail: `${cluster.server} does not answer: ${apiMessage(error)}`,
      fix: "start the cluster or point KUBECONFIG / --kube-context at one that runs",
    };
  }
}

async function namespaceCheck(cluster: Cluster): Promise<DoctorCheck> {
  const name = `namespace ${cluster.namespace}`;
  try {
    await cluster.core.readNamespace({ name: cluster.namespace });
    return { name, status: "ok", detail: "exists" };
  } catch (error) {
    if (apiStatus(error) === 404) {
      return {
        name,
        status: "fail",
        detail: "does not exist",
        fix: `kubectl create namespace ${cluster.namespace}`,
      };
    }
    // A user allowed pods in a namespace is not always allowed to read the namespace object.
    return { name, status: "warn", detail: `cannot be read (${apiMessage(error)})` };
  }
}

async function rbacCheck(cluster: Cluster): Promise<DoctorCheck> {
  const auth = cluster.kc.makeApiClient(AuthorizationV1Api);
  const missing: string[] = [];
  try {
    for (const { verb, subresource } of NEEDED) {
      const review = await auth.createSelfSubjectAccessReview({
        body: {
          spec: {
            resourceAttributes: {
              namespace: cluster.namespace,
              verb,
              resource: "pods",
              ...(subresource ? { subresource } : {}),
            },
          },
        },
      });
      if (review.status?.allowed !== true)
        missing.push(`${verb} pods${subresource ? `/${subresource}` : ""}`);
    }
  } catch (error) {
    return { name: "rbac", status: "warn", detail: `could not ask the API server (${apiMessage(error)})` };
  }
  if (missing.length === 0) {
    return {
      name: "rbac",
      status: "ok",
      detail: `may create, get, list, delete and exec into pods in ${cluster.namespace}`,
    };
  }
  return {
    name: "rbac",
    status: "fail",
    detail: `the kubeconfig's user may not ${missing.join(", ")} in ${cluster.namespace}`,
    fix: "bind it a Role with those verbs on pods and pods/exec",
  };
}

/** The pod `harness exec` would create with these settings, for a dry run. */
async function harnessPod(options: Parameters<typeof kubernetesChecks>[0]): Promise<V1Pod> {
  if (options.sandbox === undefined) throw new Error("no sandbox settings given");
  const { settings } = await planPod(options.sandbox);
  return podManifest(settings, podName(settings.workspace), randomUUID());
}

/** "harness-sandbox:x" as a node reports it ("docker.io/library/harness-sandbox:x"). */
function imageNames(image: string): string[] {
  const names = [image];
  if (!image.includes("/")) names.push(`docker.io/library/${image}`);
  else if (!/^[^/]+[.:][^/]*\//.test(image)) names.push(`docker.io/${image}`);
  return names;
}

async function imageCheck(cluster: Cluster, image: string): Promise<DoctorCheck> {
  const name = "image";
  try {
    const nodes = await cluster.core.listNode();
    const wanted = imageNames(image);
    const holders = nodes.items
      .filter((node) => node.status?.images?.some((i) => i.names?.some((n) => wanted.includes(n))))
      .map((node) => node.metadata?.name ?? "?");
    if (holders.length > 0) return { name, status: "ok", detail: `${image} is on ${holders.join(", ")}` };
    return {
      name,
      status: "warn",
      detail: `no node reports ${image} (nodes list only their largest images)`,
      fix: "load it into the nodes' runtime (ctr -n k8s.io images import) or pass an --image a registry serves",
    };
  } catch (error) {
    return { name, status: "warn", detail: `cannot list nodes to look (${apiMessage(error)})` };
  }
}

async function runtimeClassCheck(cluster: Cluster, runtime: string | undefined): Promise<DoctorCheck> {
  if (runtime === undefined)
    return { name: "runtime class", status: "ok", detail: "none asked: the nodes' default runtime" };
  try {
    const rc = await cluster.kc.makeApiClient(NodeV1Api).readRuntimeClass({ name: runtime });
    return { name: `runtime class ${runtime}`, status: "ok", detail: `handler ${rc.handler}` };
  } catch (error) {
    return {
      name: `runtime class ${runtime}`,
      status: "fail",
      detail: apiStatus(error) === 404 ? "does not exist" : apiMessage(error),
      fix: "create the RuntimeClass (and its handler on the nodes) or leave out --runtime",
    };
  }
}

/** Each node's kubelet podPidsLimit: the only process limit a pod has. */
async function pidsChecks(cluster: Cluster): Promise<DoctorCheck[]> {
  const limits = await nodePidsLimits(cluster).catch((error: unknown) => error as Error);
  if (limits instanceof Error) {
    return [{ name: "pids limit", status: "warn", detail: `cannot list the nodes (${apiMessage(limits)})` }];
  }
  return [...limits].map(([node, limit]): DoctorCheck => {
    const name = `pids limit ${node}`;
    if (typeof limit === "number") return { name, status: "ok", detail: `podPidsLimit ${limit}` };
    const fix = "set podPidsLimit in the kubelet configuration (harness's Docker default is 512)";
    if (limit === undefined) {
      return {
        name,
        status: "warn",
        detail: "kubelet sets no podPidsLimit: a fork bomb in a pod is bounded only by its memory limit",
        fix,
      };
    }
    return {
      name,
      status: "warn",
      detail: `cannot read kubelet's podPidsLimit (${limit.unknown})`,
      fix: `check that ${fix}`,
    };
  });
}

/** A node's podPidsLimit: a number, undefined when unset (or -1), or why it could not be read. */
export type PidsLimit = number | undefined | { unknown: string };

/**
 * node → its kubelet's podPidsLimit, from /configz: through the API server's node proxy, else (the
 * API server refuses to proxy to a node at a loopback address) from the kubelet itself, with the
 * kubeconfig's credentials.
 */
export async function nodePidsLimits(cluster: Cluster): Promise<Map<string, PidsLimit>> {
  const nodes = await cluster.core.listNode();
  const limits = new Map<string, PidsLimit>();
  for (const node of nodes.items) {
    const name = node.metadata?.name ?? "";
    let text: unknown;
    try {
      text = await cluster.core.connectGetNodeProxyWithPath({ name, path: "configz" });
    } catch (error) {
      const address = node.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
      const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
      text =
        address === undefined || port === undefined
          ? undefined
          : await kubeletConfigz(cluster, address, port).catch(() => undefined);
      if (text === undefined) {
        limits.set(name, { unknown: apiMessage(error) });
        continue;
      }
    }
    const config = (typeof text === "string" ? JSON.parse(text) : text) as {
      kubeletconfig?: { podPidsLimit?: number };
    };
    const limit = config.kubeletconfig?.podPidsLimit;
    limits.set(name, limit !== undefined && limit > 0 ? limit : undefined);
  }
  return limits;
}

/** GET https://ADDRESS:PORT/configz of a kubelet, authenticated as the kubeconfig's user. */
async function kubeletConfigz(cluster: Cluster, address: string, port: number): Promise<string> {
  const options: RequestOptions = {
    host: address.includes(":") ? `[${address}]` : address,
    port,
    path: "/configz",
    method: "GET",
    timeout: 5000,
  };
  await cluster.kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        res.statusCode === 200
          ? resolve(Buffer.concat(chunks).toString("utf8"))
          : reject(new Error(`kubelet /configz answered ${res.statusCode}`)),
      );
    });
    req.on("timeout", () => req.destroy(new Error("kubelet /configz timed out")));
    req.on("error", reject);
    req.end();
  });
}
