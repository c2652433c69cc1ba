/** Opens the workspace's sandbox with the CLI's settings; build progress goes to stderr. */
import type { SandboxConfig } from "../config.js";
import { DockerSandbox } from "../sandbox/docker/docker-sandbox.js";

export async function openSandbox(
  config: SandboxConfig,
  options: { removeOnStop?: boolean; progress?: (line: string) => void } = {},
): Promise<DockerSandbox> {
  return DockerSandbox.open({
    workspace: config.workspace,
    image: config.image,
    network: config.network,
    user: config.user,
    runtime: config.runtime,
    memoryBytes: config.memoryBytes,
    tmpSizeMiB: config.tmpSizeMiB,
    homeSizeMiB: config.homeSizeMiB,
    cpus: config.cpus,
    pidsLimit: config.pidsLimit,
    protect: config.protect,
    isolation: config.isolation,
    copyLimitBytes: config.copyLimitBytes,
    defaultTimeoutMs: config.timeoutMs,
    removeOnStop: options.removeOnStop,
    onProgress: options.progress ?? ((line) => process.stderr.write(`harness: ${line}\n`)),
  });
}
