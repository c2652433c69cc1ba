/**
 * The SandboxTemplate a `--kube-warm-pool` pool must be made from: harness's own pod spec
 * (pod/pod-spec.ts) for these settings, which is what a claimed pod is compared with
 * (pod/pod-hardening.ts). `harness kube-template NAME` prints it for `kubectl apply -f -`.
 */
import type { KubernetesSandboxOptions } from "./kubernetes-options.js";
import { podManifest } from "./pod/pod-spec.js";
import { planPod } from "./pod-plan.js";

export async function sandboxTemplate(options: KubernetesSandboxOptions, name: string): Promise<object> {
  const { settings } = await planPod(options);
  return {
    apiVersion: "extensions.agents.x-k8s.io/v1beta1",
    kind: "SandboxTemplate",
    metadata: { name, namespace: settings.namespace },
    spec: { podTemplate: { spec: podManifest(settings, name, name).spec } },
  };
}
