/**
 * What a remote engine (docker-endpoint.ts `remote`) cannot do: mount host paths. The workspace and
 * the allowlist gateway's socket directory are on this machine, not the engine's.
 */

import { ConfigError } from "../../../errors.js";
import type { IsolationKind } from "../../sandbox-request.js";
import type { DockerSandboxOptions } from "../docker-sandbox-options.js";
import type { DockerEndpoint } from "./docker-endpoint.js";

/**
 * The isolation to use on `endpoint`: the requested one on a local engine; copy on a remote one
 * (said once through `onProgress` unless copy was asked for). Bind named by the user, or allowlist
 * mode, on a remote engine is a ConfigError.
 */
export function isolationForEngine(
  options: Pick<DockerSandboxOptions, "isolation" | "isolationExplicit" | "egress" | "onProgress">,
  endpoint: DockerEndpoint,
): IsolationKind {
  const requested = options.isolation ?? "bind";
  if (!endpoint.remote) return requested;
  const where = `${endpoint.host} (${endpoint.source})`;
  if (options.egress !== undefined)
    throw new ConfigError(
      `--allow-host/--allow need a local engine: harness's network gateway listens on a Unix socket on this machine, which a container on ${where} cannot mount`,
    );
  if (requested === "bind" && options.isolationExplicit === true)
    throw new ConfigError(
      `--isolation bind needs a local engine: ${where} is remote and cannot mount this machine's workspace; use --isolation copy (or leave --isolation out)`,
    );
  if (requested === "bind")
    options.onProgress?.(
      `the engine at ${where} is remote: the workspace is copied in (copy isolation) instead of mounted`,
    );
  return "copy";
}
