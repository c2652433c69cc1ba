/** Where the sandbox runs: Docker (or Podman) containers, or pods on a Kubernetes cluster. */
import { ConfigError } from "../errors.js";
import type { Setting } from "./setting.js";

/** Where sandboxes run: Docker (or Podman) containers, or pods on a Kubernetes cluster. */
export const ENGINES = ["docker", "kubernetes"] as const;
export type SandboxEngine = (typeof ENGINES)[number];

export const ENGINE_SETTINGS = {
  engine: {
    flag: "--engine <name>",
    env: "HARNESS_ENGINE",
    help: "where the sandbox runs: docker (Docker or Podman) or kubernetes (a pod)",
    default: "docker" as SandboxEngine,
    choices: ENGINES,
    parse: (text: string, name: string): SandboxEngine => {
      if (!(ENGINES as readonly string[]).includes(text))
        throw new ConfigError(`${name} must be ${ENGINES.join(" or ")}, got '${text}'`);
      return text as SandboxEngine;
    },
  },
  kubeContext: {
    flag: "--kube-context <name>",
    help: "kubernetes: the kubeconfig context to use (KUBECONFIG is read as kubectl reads it)",
    defaultText: "KUBECONFIG's current context",
  },
  namespace: {
    flag: "--namespace <name>",
    env: "HARNESS_NAMESPACE",
    help: "kubernetes: the namespace of the sandbox pods",
    defaultText: "harness",
  },
  /** Flag only: a `.env` must not pick the profile the sandbox runs under. */
  kubeSeccompProfile: {
    flag: "--kube-seccomp-profile <path>",
    help: "kubernetes: a Localhost seccomp profile the nodes hold, e.g. harness/sandbox.json (harness's own)",
    defaultText: "the runtime's",
  },
  /** Flag only: a `.env` must not pick which cluster-made pod the workspace goes to. */
  kubeWarmPool: {
    flag: "--kube-warm-pool <name>",
    help: "kubernetes: claim the sandbox's pod from this SandboxWarmPool (kubernetes-sigs/agent-sandbox) instead of creating one; its pod must be hardened as harness's own, or it is refused",
  },
} as const satisfies Record<string, Setting>;
