import type Docker from "dockerode";
import { EngineGoneError, SandboxError } from "../../../errors.js";

/** The HTTP status docker-modem puts on an engine error (404 gone, 304 not modified, 409 conflict). */
export function dockerStatus(error: unknown): number | undefined {
  return (error as { statusCode?: number } | undefined)?.statusCode;
}

/** Socket errors that mean the engine is not there: refused, no socket file, cut off mid-answer. */
const GONE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ECONNABORTED"]);

/**
 * Whether an engine call failed because the engine itself is gone (stopped, killed, restarting),
 * not because of what was asked: its connection was refused or cut, or its unix socket is missing
 * (a cleanly stopped dockerd removes it). An answer with an HTTP status is never this.
 */
export function engineUnreachable(error: unknown): boolean {
  if (error instanceof EngineGoneError) return true;
  if (dockerStatus(error) !== undefined) return false;
  const { code, syscall, message } = (error ?? {}) as {
    code?: unknown;
    syscall?: unknown;
    message?: unknown;
  };
  if (typeof code === "string" && GONE_CODES.has(code)) return true;
  if (code === "ENOENT" && syscall === "connect") return true;
  return typeof message === "string" && /socket hang up/.test(message);
}

/**
 * An engine call that failed, as the `SandboxError` harness reports: `what` failed, the container's
 * short id when there is one, and the engine's message; the engine's error is kept as the cause. When
 * the engine itself is gone, an `EngineGoneError` that says so and what brings the run back.
 */
export function sandboxError(what: string, error: unknown, containerId?: string): SandboxError {
  const detail = (error as Error)?.message ?? String(error);
  const id = containerId ? ` (${containerId.slice(0, 12)})` : "";
  if (engineUnreachable(error)) return engineGone(`${what.replace(/ failed$/, "")}${id}`, error, containerId);
  return new SandboxError(`${what}${id}: ${detail}`, { cause: error, containerId });
}

/** The one line for an engine that went away while harness was doing `where` ("running the command"). */
export function engineGone(where: string, error: unknown, containerId?: string): EngineGoneError {
  if (error instanceof EngineGoneError) return error;
  const detail = (error as Error)?.message ?? String(error);
  return new EngineGoneError(
    `the Docker engine went away (${detail}) while ${where}; once it answers again, harness starts the sandbox container again (or makes it again), and the next command carries on (\`harness run --continue\` for a run)`,
    { cause: error, containerId },
  );
}

/**
 * After `error` from a step against the container: an `EngineGoneError` when the engine no longer
 * answers even a look at the container (a failure while it was shutting down can have any shape),
 * else `error` itself.
 */
export async function classifyEngineError(
  container: Docker.Container,
  where: string,
  error: unknown,
): Promise<unknown> {
  if (error instanceof EngineGoneError) return error;
  const probe = await container.inspect().then(
    () => undefined,
    (probeError: unknown) => probeError,
  );
  return probe !== undefined && engineUnreachable(probe) ? engineGone(where, error, container.id) : error;
}
