/** Opens the workspace's sandbox with the CLI's settings; build progress goes to stderr. */
import type { SandboxConfig } from "../config.js";
import { DockerSandbox } from "../sandbox/docker/docker-sandbox.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";

export async function openSandbox(
  config: SandboxConfig,
  options: { removeOnStop?: boolean; progress?: (line: string) => void } = {},
): Promise<DockerSandbox> {
  return DockerSandbox.open({
    ...config,
    removeOnStop: options.removeOnStop,
    // The lines name what the sandbox made (the git warning, setuid files): shown, never obeyed.
    onProgress:
      options.progress ??
      ((line) => process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`)),
  });
}
