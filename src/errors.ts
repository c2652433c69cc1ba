/**
 * Infrastructure failures. A command that fails, times out or is blocked is *not* one of these:
 * it is an `ExecResult`. The CLI turns every `HarnessError` into one line and an exit code.
 */
export class HarnessError extends Error {
  override readonly name: string = "HarnessError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Bad flags, missing key or model, unreadable workspace: the user can fix it. */
export class ConfigError extends HarnessError {
  override readonly name = "ConfigError";
}

/**
 * The sandbox could not do its job: daemon unreachable, container gone and not recoverable, image build
 * failed.
 */
export class SandboxError extends HarnessError {
  override readonly name = "SandboxError";
  /** The container involved, when there is one. */
  readonly containerId: string | undefined;
  constructor(message: string, options?: { cause?: unknown; containerId?: string | undefined }) {
    super(message, options);
    this.containerId = options?.containerId;
  }
}

/**
 * The sandbox's copy of the workspace is over the copy limits (`--copy-limit`, `--copy-max-files`):
 * it cannot be read back whole, so it can never be applied, and is not kept (docs/copy-mode.md).
 */
export class CopyOverLimitError extends SandboxError {}

/**
 * The engine itself stopped answering (its socket refused or closed: a crash, `kill -9`, `systemctl
 * restart docker`, an upgrade) while the sandbox used it. Not the command's doing, and nothing in the
 * sandbox can be trusted to have finished: the run ends with this one line, and the next command
 * (`harness run --continue`) finds the container again once the engine is back. Still a
 * `SandboxError`: whatever ends a run on one ends it on this.
 */
export class EngineGoneError extends SandboxError {}

/**
 * The model API failed in a way retries did not cure (bad key, bad model, bad request, overloaded too
 * long).
 */
export class ModelError extends HarnessError {
  override readonly name = "ModelError";
  /** HTTP status from the API, when there was a response. */
  readonly status: number | undefined;
  /** The API's `request-id` header, for support tickets. */
  readonly requestID: string | undefined;
  /**
   * How long the API asked callers to wait (`retry-after-ms`, `retry-after`), in ms; set on HTTP
   * answers that carried it. A shared backoff (`harness batch`) waits this long for every task.
   */
  readonly retryAfterMs: number | undefined;
  constructor(
    message: string,
    options?: {
      cause?: unknown;
      status?: number | undefined;
      requestID?: string | undefined;
      retryAfterMs?: number | undefined;
    },
  ) {
    super(message, options);
    this.status = options?.status;
    this.requestID = options?.requestID;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** The user cancelled (Ctrl-C) while harness was waiting on the model. */
export class CanceledError extends HarnessError {
  override readonly name = "CanceledError";
}

/** What an error says about itself in a record a program reads (the transcript, the JSON result). */
export interface ErrorFacts {
  /** The error class: "ModelError", "SandboxError", "ConfigError", "HarnessError", … */
  name: string;
  /** Its message, whole. */
  message: string;
  /** HTTP status from the Messages API (ModelError). */
  status?: number;
  /** The API's request id (ModelError), for support tickets. */
  requestID?: string;
  /** The sandbox container involved (SandboxError). */
  containerId?: string;
}

/** The facts of `error`: its class and message, and those of the fields above that it carries. */
export function errorFacts(error: unknown): ErrorFacts {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const facts: ErrorFacts = { name: error.name, message: error.message };
  const { status, requestID, containerId } = error as {
    status?: unknown;
    requestID?: unknown;
    containerId?: unknown;
  };
  if (typeof status === "number") facts.status = status;
  if (typeof requestID === "string") facts.requestID = requestID;
  if (typeof containerId === "string") facts.containerId = containerId;
  return facts;
}
