/** Opens the workspace's sandbox with the CLI's settings; build progress goes to stderr. */
import type { SandboxConfig } from "../config.js";
import { DockerSandbox } from "../sandbox/docker/docker-sandbox.js";

export async function openSandbox(
  config: SandboxConfig,
  options: { removeOnStop?: boolean; progress?: (line: string) => void } = {},
): Promise<DockerSandbox> {
  return DockerSandbox.open({
    ...config,
    removeOnStop: options.removeOnStop,
    onProgress: options.progress ?? ((line) => process.stderr.write(`harness: ${line}\n`)),
  });
}
