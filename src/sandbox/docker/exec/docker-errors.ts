import { SandboxError } from "../../../errors.js";

/** The HTTP status docker-modem puts on an engine error (404 gone, 304 not modified, 409 conflict). */
export function dockerStatus(error: unknown): number | undefined {
  return (error as { statusCode?: number } | undefined)?.statusCode;
}

/**
 * An engine call that failed, as the `SandboxError` harness reports: `what` failed, the container's
 * short id when there is one, and the engine's message; the engine's error is kept as the cause.
 */
export function sandboxError(what: string, error: unknown, containerId?: string): SandboxError {
  const detail = (error as Error)?.message ?? String(error);
  return new SandboxError(`${what}${containerId ? ` (${containerId.slice(0, 12)})` : ""}: ${detail}`, {
    cause: error,
    containerId,
  });
}
