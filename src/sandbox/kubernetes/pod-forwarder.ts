/**
 * Kubernetes' half of `--publish` (the rest is `../publish/`, as on Docker): one connection's
 * forwarder is one exec over the pod's exec API (v5.channel.k8s.io), its bytes up as the exec's
 * stdin (closing stdin is the client's half-close), down as its stdout. The exec API cannot name a
 * user, so the forwarder starts through run-as.py and runs as the sandbox user, never as the
 * machinery's root. Nothing is opened on the cluster's side (no port-forward, no Service): the pod
 * keeps only `lo`.
 */
import { forwardCommand } from "../publish/forward-command.js";
import type { OpenForwarder } from "../publish/forwarder-exec.js";
import { asUser } from "./api/pod-command.js";
import { openPodExec, type PodTarget } from "./api/pod-exec.js";

/** Opening the exec; a wedged API server or kubelet must not hold the client forever. */
const START_DEADLINE_MS = 15_000;

/** Forwarders in `target`, run as `user` ("uid:gid"). */
export function podForwarder(target: PodTarget, user: string): OpenForwarder {
  return (port, output) =>
    openPodExec(target, asUser(user, forwardCommand(port)), output, {
      stdin: true,
      deadlineMs: START_DEADLINE_MS,
    });
}
