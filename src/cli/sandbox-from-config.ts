/** Opens the workspace's sandbox with the CLI's settings; build progress goes to stderr. */
import type { SandboxConfig } from "../config.js";
import { DockerSandbox } from "../sandbox/docker/docker-sandbox.js";
import { KubernetesSandbox } from "../sandbox/kubernetes/kubernetes-sandbox.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { watchEnvFiles } from "./env-file-watch.js";

export async function openSandbox(
  config: SandboxConfig,
  options: {
    removeOnStop?: boolean;
    progress?: (line: string) => void;
    /** Kubernetes: the pod the batch's warm pool made for this sandbox. */
    warmPod?: string | undefined;
  } = {},
): Promise<DockerSandbox | KubernetesSandbox> {
  // The lines name what the sandbox made (the git warning, setuid files): shown, never obeyed.
  const say =
    options.progress ??
    ((line: string) => process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`));
  // Every sandbox, whatever the command: what it could write includes a `.env` harness loads later.
  const watch = watchEnvFiles(config.workspace);
  let sandbox: DockerSandbox | KubernetesSandbox;
  try {
    sandbox =
      config.engine === "kubernetes"
        ? await KubernetesSandbox.open({ ...config, warmPod: options.warmPod, onProgress: say })
        : await DockerSandbox.open({ ...config, removeOnStop: options.removeOnStop, onProgress: say });
  } catch (error) {
    for (const line of watch.close()) say(line);
    throw error;
  }
  for (const { port, hostPort } of sandbox.published?.ports ?? []) {
    say(`sandbox port ${port} published at 127.0.0.1:${hostPort} (the sandbox still has no network)`);
  }
  // The watch ends only once the sandbox has stopped: its leftover processes ended, copy mode's
  // changes applied or dropped. Every command ends its sandbox through `stop` (`await using` too).
  const stop = sandbox.stop.bind(sandbox);
  sandbox.stop = async () => {
    try {
      await stop();
    } finally {
      for (const line of watch.close()) say(line);
    }
  };
  return sandbox;
}
