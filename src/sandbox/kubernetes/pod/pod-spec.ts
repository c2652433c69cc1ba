/**
 * The sandbox pod: Docker's hardening (docker/container/container-spec.ts) mapped field by field onto
 * a Pod. The model is Docker's: the machinery (PID 1, the executor) runs as root holding only
 * CAP_SETUID and CAP_SETGID, and drops every command to the workspace owner's uid before exec, so no
 * command can signal, trace or open it. What a Pod cannot express is listed in docs/engines.md.
 *
 * | Docker (container-spec.ts)              | Pod                                                           |
 * |-----------------------------------------|---------------------------------------------------------------|
 * | User 0:0, CapDrop ALL, CapAdd SETUID/GID | runAsUser 0, capabilities drop ALL, add SETUID, SETGID       |
 * | no-new-privileges                       | allowPrivilegeEscalation: false                               |
 * | seccomp (Docker's default + setid rules) | RuntimeDefault, or harness's profile as Localhost if installed |
 * | ReadonlyRootfs                          | readOnlyRootFilesystem: true                                  |
 * | Tmpfs /tmp, home, /run/harness (sized)  | emptyDir medium Memory with sizeLimit (owners: pod-setup.sh)  |
 * | copy volume at the workdir              | emptyDir on the node's disk                                   |
 * | Memory = MemorySwap, NanoCpus           | resources.limits memory, cpu (requests small: see below)     |
 * | PidsLimit                               | none per pod: the node's podPidsLimit (kubelet)               |
 * | NetworkMode none                        | none per pod: pod-setup.sh refuses a pod with more than lo    |
 * | IpcMode private, no host namespaces     | hostIPC/hostPID/hostNetwork false, shareProcessNamespace false|
 * | no secrets in the environment           | automountServiceAccountToken false, enableServiceLinks false |
 * | Runtime (runsc…)                        | runtimeClassName                                              |
 * | StopTimeout 1, RestartPolicy no         | terminationGracePeriodSeconds 1, restartPolicy Never          |
 */
import { createHash, randomBytes } from "node:crypto";
import { basename } from "node:path";
import type { V1Container, V1Pod, V1SeccompProfile, V1SecurityContext } from "@kubernetes/client-node";
import { HARNESS_VERSION } from "../../../version.js";
import { initCommand } from "../../docker/container/container-scripts.js";
import { HOME_DIR, sandboxEnv } from "../../docker/container/container-spec.js";
import {
  LABEL_OWNER_BOOT_ID,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PID_NS,
} from "../../docker/container/labels.js";
import { ownerIdentity } from "../../docker/isolation/labels/copy-container-labels.js";
import { STATE_DIR } from "../../exec/exec-scripts.js";
import { programText } from "../../exec/program-text.js";
import { parseUserIds } from "../../sandbox-user.js";

/** The container commands run in; exec targets it by name. */
export const SANDBOX_CONTAINER = "sandbox";

export const LABEL_MANAGED = "dev.harness.managed";
export const LABEL_VERSION = "dev.harness.version";
export const LABEL_WORKSPACE_HASH = "dev.harness.workspace-hash";
export const LABEL_SESSION = "dev.harness.session-id";
export const LABEL_ISOLATION = "dev.harness.isolation";
/** Made ahead of its task by a batch's warm pool; the value names the batch. */
export const LABEL_WARM_POOL = "dev.harness.warm-pool";
/** What the pod was made from (`podConfigHash`): a warm pod is taken only by an open that would make the same. */
export const ANNOTATION_CONFIG_HASH = "dev.harness.config-hash";
/** A label value cannot hold a path: the workspace is an annotation. */
export const ANNOTATION_WORKSPACE = "dev.harness.workspace";
/** The selector `harness ps` and `rm` list pods by. */
export const MANAGED_SELECTOR = `${LABEL_MANAGED}=true`;

/** What the pod is made from: the settings, resolved. */
export interface PodSettings {
  namespace: string;
  image: string;
  /** Real host path of the workspace (for the annotation and the name). */
  workspace: string;
  workdir: string;
  /** "uid:gid" of the commands, never root. */
  user: string;
  /** "none" (only lo, checked) or "pod" (the cluster's network, as its NetworkPolicy allows). */
  network: "none" | "pod";
  memoryBytes: number;
  cpus: number;
  tmpSizeMiB: number;
  homeSizeMiB: number;
  /** A RuntimeClass name (gVisor, Kata…); undefined for the node's default. */
  runtimeClassName?: string | undefined;
  /** Bind the pod to this node instead of asking a scheduler. */
  nodeName?: string | undefined;
  /**
   * A Localhost seccomp profile on the nodes (relative to kubelet's seccomp directory), e.g. harness's
   * own (docker/sandbox-seccomp.json, which also refuses set-id mode bits) installed as
   * `harness/sandbox.json`; undefined for the runtime's default.
   */
  seccompProfile?: string | undefined;
}

/**
 * Requests stay small so that a batch's pods fit a node by their real use, not their limits: a
 * request of the full limit would keep four 2-CPU sandboxes off a 2-core node.
 */
const REQUESTS = { cpu: "50m", memory: "64Mi" };

/** The sandbox container's requests: the small ones, never above the limits. */
function sandboxRequests(s: PodSettings): Record<string, string> {
  return {
    cpu: s.cpus < 0.05 ? String(s.cpus) : REQUESTS.cpu,
    memory: s.memoryBytes < 64 * 1024 ** 2 ? String(s.memoryBytes) : REQUESTS.memory,
  };
}

/** The harness process that creates the pod, as Docker's copy-mode containers carry it in labels. */
export function ownerAnnotations(): Record<string, string> {
  const owner = ownerIdentity();
  return {
    [LABEL_OWNER_HOST]: owner.host,
    [LABEL_OWNER_BOOT_ID]: owner.bootId,
    [LABEL_OWNER_PID_NS]: owner.pidNs,
    [LABEL_OWNER_PID]: String(owner.pid),
  };
}

/** A DNS-1123 name: harness-<workspace>-<hash of its path>-<random>. */
export function podName(workspace: string): string {
  const slug =
    basename(workspace)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 30)
      .replace(/-+$/, "") || "workspace";
  return `harness-${slug}-${workspaceHash(workspace).slice(0, 10)}-${randomBytes(4).toString("hex")}`;
}

export function workspaceHash(workspace: string): string {
  return createHash("sha256").update(workspace).digest("hex").slice(0, 16);
}

/** A label value: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends. */
export function labelValue(text: string): string {
  return (
    text
      .replace(/[^A-Za-z0-9._-]+/g, "-")
      .slice(0, 63)
      .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "") || "x"
  );
}

function seccomp(s: PodSettings): V1SeccompProfile {
  return s.seccompProfile === undefined
    ? { type: "RuntimeDefault" }
    : { type: "Localhost", localhostProfile: s.seccompProfile };
}

function securityContext(caps: readonly string[], s: PodSettings): V1SecurityContext {
  return {
    runAsUser: 0,
    runAsGroup: 0,
    runAsNonRoot: false,
    privileged: false,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ["ALL"], add: [...caps] },
    seccompProfile: seccomp(s),
    procMount: "Default",
  };
}

/** The init container: gives the sandbox user its directories, checks the network (pod-setup.sh). */
function setupContainer(s: PodSettings): V1Container {
  const { uid, gid } = parseUserIds(s.user);
  return {
    name: "setup",
    image: s.image,
    imagePullPolicy: "IfNotPresent",
    command: [
      "/bin/sh",
      "-c",
      programText(new URL("./pod-setup.sh", import.meta.url)),
      "harness-pod-setup",
      String(uid),
      String(gid),
      s.network === "none" ? "1" : "0",
      HOME_DIR,
      STATE_DIR,
      s.workdir,
    ],
    securityContext: securityContext(["CHOWN"], s),
    resources: { limits: { cpu: "500m", memory: "64Mi" }, requests: REQUESTS },
    volumeMounts: volumeMounts(s),
    terminationMessagePolicy: "File",
  };
}

function volumeMounts(s: PodSettings) {
  return [
    { name: "tmp", mountPath: "/tmp" },
    { name: "home", mountPath: HOME_DIR },
    { name: "state", mountPath: STATE_DIR },
    { name: "workspace", mountPath: s.workdir },
  ];
}

/** The settings that shape the pod, hashed: the same for a warm pod and the open that takes it. */
export function podConfigHash(s: PodSettings): string {
  return createHash("sha256")
    .update(JSON.stringify(podManifest(s, "", "", undefined, false).spec))
    .digest("hex")
    .slice(0, 16);
}

/**
 * The whole Pod. `session` tells this process's pods from others'; `warmPool` marks one a batch's
 * warm pool made ahead of its task.
 */
export function podManifest(
  s: PodSettings,
  name: string,
  session: string,
  warmPool?: string,
  hashed = true,
): V1Pod {
  const env = sandboxEnv().map((entry) => {
    const at = entry.indexOf("=");
    return { name: entry.slice(0, at), value: entry.slice(at + 1) };
  });
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: s.namespace,
      labels: {
        [LABEL_MANAGED]: "true",
        [LABEL_VERSION]: labelValue(HARNESS_VERSION),
        [LABEL_WORKSPACE_HASH]: workspaceHash(s.workspace),
        [LABEL_SESSION]: labelValue(session),
        [LABEL_ISOLATION]: "copy",
        ...(warmPool === undefined ? {} : { [LABEL_WARM_POOL]: labelValue(warmPool) }),
        "app.kubernetes.io/managed-by": "harness",
      },
      // Who made it, so that a later run can delete it once this process is gone (a second Ctrl-C,
      // a kill -9): annotations, as the values are no label values.
      annotations: {
        [ANNOTATION_WORKSPACE]: s.workspace,
        ...ownerAnnotations(),
        ...(hashed ? { [ANNOTATION_CONFIG_HASH]: podConfigHash(s) } : {}),
      },
    },
    spec: {
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      shareProcessNamespace: false,
      ...(s.runtimeClassName ? { runtimeClassName: s.runtimeClassName } : {}),
      ...(s.nodeName ? { nodeName: s.nodeName } : {}),
      securityContext: { seccompProfile: seccomp(s) },
      initContainers: [setupContainer(s)],
      containers: [
        {
          name: SANDBOX_CONTAINER,
          image: s.image,
          imagePullPolicy: "IfNotPresent",
          command: initCommand(),
          workingDir: s.workdir,
          env,
          stdin: false,
          tty: false,
          securityContext: securityContext(["SETUID", "SETGID"], s),
          resources: {
            limits: { cpu: String(s.cpus), memory: String(s.memoryBytes) },
            requests: sandboxRequests(s),
          },
          volumeMounts: volumeMounts(s),
        },
      ],
      volumes: [
        { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: `${s.tmpSizeMiB}Mi` } },
        { name: "home", emptyDir: { medium: "Memory", sizeLimit: `${s.homeSizeMiB}Mi` } },
        { name: "state", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
        // On the node's disk, as Docker's copy volume: the workspace may outgrow memory.
        { name: "workspace", emptyDir: {} },
      ],
    },
  };
}
