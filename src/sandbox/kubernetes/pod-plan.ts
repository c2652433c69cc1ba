/**
 * What a sandbox's pod will be, decided before it is made: the cluster, the workspace and its user,
 * and the pod's settings. `KubernetesSandbox.open` and the batch's warm pool (warm-pod.ts) both go
 * through here, so a pod made ahead of its task has the very settings (and config hash) the task's
 * own open computes.
 */
import { resolveWorkspace } from "../host/workspace.js";
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";
import { resolveSandboxUser } from "../sandbox-user.js";
import { type Cluster, connectCluster } from "./api/kube-client.js";
import { defaultPodImage } from "./default-image.js";
import { type KubernetesSandboxOptions, podNetwork, refuseUnsupported } from "./kubernetes-options.js";
import type { PodSettings } from "./pod/pod-spec.js";

export interface PodPlan {
  cluster: Cluster;
  settings: PodSettings;
  /** The workspace's real path. */
  workspace: string;
  /** Canonical "uid:gid", never root. */
  user: string;
}

/** Refuses what a pod cannot do, then resolves everything else. */
export async function planPod(options: KubernetesSandboxOptions): Promise<PodPlan> {
  refuseUnsupported(options);
  const network = podNetwork(options);
  const { path: workspace, owner } = await resolveWorkspace(options.workspace);
  const user = resolveSandboxUser(workspace, owner, options.user);
  const cluster = connectCluster(options);
  const d = SANDBOX_DEFAULTS;
  const settings: PodSettings = {
    namespace: cluster.namespace,
    image: options.image ?? defaultPodImage(),
    workspace,
    workdir: options.workdir ?? d.workdir,
    user,
    network,
    memoryBytes: options.memoryBytes ?? d.memoryBytes,
    cpus: options.cpus ?? d.cpus,
    tmpSizeMiB: options.tmpSizeMiB ?? d.tmpSizeMiB,
    homeSizeMiB: options.homeSizeMiB ?? d.homeSizeMiB,
    runtimeClassName: options.runtime,
    nodeName: options.node,
    seccompProfile: options.seccompProfile,
  };
  return { cluster, settings, workspace, user };
}
