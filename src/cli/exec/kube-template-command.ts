/**
 * `harness kube-template NAME`: prints (JSON, which `kubectl apply -f -` reads) the SandboxTemplate
 * of the pod harness makes on `--engine kubernetes` with these settings, for the SandboxWarmPool
 * that `--kube-warm-pool` claims from: a pool made from anything else is refused at the claim.
 */
import { type CliFlags, loadSandboxConfig } from "../../config.js";
import { sandboxTemplate } from "../../sandbox/kubernetes/sandbox-template.js";

export async function kubeTemplateCommand(name: string, flags: CliFlags): Promise<number> {
  const config = loadSandboxConfig(process.env, { ...flags, engine: "kubernetes" });
  process.stdout.write(`${JSON.stringify(await sandboxTemplate(config, name), null, 2)}\n`);
  return 0;
}
