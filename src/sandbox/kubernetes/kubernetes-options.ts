/** What `KubernetesSandbox.open` takes, and the requests it refuses in one line. */
import { ConfigError } from "../../errors.js";
import type { DockerSandboxOptions } from "../docker/docker-sandbox-options.js";
import type { SandboxRequest } from "../sandbox-request.js";
import type { ClusterOptions } from "./api/kube-client.js";

/** Allowlist mode's gateway settings, as Docker's (tests shorten them and map names to loopback). */
type GatewayTuning = Pick<
  DockerSandboxOptions,
  "egressLookup" | "egressIdleMs" | "egressMaxConnectionMs" | "egressMaxConnections" | "egressUpstreamCa"
>;

export interface KubernetesSandboxOptions extends SandboxRequest, ClusterOptions, GatewayTuning {
  /** Container path of the workspace. */
  workdir?: string | undefined;
  outputHeadBytes?: number | undefined;
  outputTailBytes?: number | undefined;
  /** Seconds between TERM and KILL when a command is killed. */
  killGraceSeconds?: number | undefined;
  /** Lifecycle messages for the user (not the model). */
  onProgress?: ((line: string) => void) | undefined;
  /** How long the pod may take to run (image, setup, scheduling). Default 120 s. */
  startTimeoutMs?: number | undefined;
  /** Put the pod on this node (spec.nodeName) instead of leaving it to the scheduler. */
  node?: string | undefined;
  /**
   * `--kube-seccomp-profile`: a Localhost seccomp profile the nodes hold (relative to kubelet's
   * seccomp directory), e.g. `harness/sandbox.json`; default the runtime's (RuntimeDefault).
   */
  seccompProfile?: string | undefined;
  /** A pod the batch's warm pool made for this sandbox (warm-pod.ts): taken when its settings match. */
  warmPod?: string | undefined;
  /**
   * `--kube-warm-pool NAME`: claim the pod from this SandboxWarmPool (kubernetes-sigs/agent-sandbox)
   * instead of creating one; it must be hardened as harness's own (pod/pod-hardening.ts).
   */
  warmPool?: string | undefined;
  /**
   * Keep the pod for the workspace's next session instead of deleting it (pod/kept-pod.ts): the
   * CLI's sessions; not with `warmPool` or `warmPod`, whose pods are always deleted at the end.
   */
  keepPod?: boolean | undefined;
  /** Accepted for the Docker options' sake: `keepPod` decides whether a pod outlives its session. */
  removeOnStop?: boolean | undefined;
}

/** The network a pod gets: "none" (checked: only lo) or "pod" (the cluster's, as its policy allows). */
export function podNetwork(options: KubernetesSandboxOptions): "none" | "pod" {
  const network = options.network ?? "none";
  if (network !== "none" && network !== "pod") {
    throw new ConfigError(
      `--network ${network}: on --engine kubernetes the network is "none" (the pod must have only lo) or "pod" (the cluster's pod network, as its NetworkPolicy allows)`,
    );
  }
  return network;
}

/** The requests a pod cannot honour, refused before anything is created. */
export function refuseUnsupported(options: KubernetesSandboxOptions): void {
  if (options.isolation === "bind" && options.isolationExplicit === true) {
    throw new ConfigError(
      "--isolation bind is not possible on --engine kubernetes: a cluster's node cannot mount this machine's directory; the workspace is copied in (--isolation copy, the default there)",
    );
  }
  if (options.egress !== undefined && podNetwork(options) !== "none") {
    throw new ConfigError(
      "--allow-host/--allow need --network none (the default): with --network pod the sandbox could reach any host around the allowlist",
    );
  }
  if (options.devcontainer !== undefined) {
    throw new ConfigError(
      "--devcontainer is not available on --engine kubernetes yet: pass its image with --image",
    );
  }
}
