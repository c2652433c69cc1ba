/**
 * Infrastructure failures. A command that fails, times out or is blocked is *not* one of these:
 * it is an `ExecResult`. The CLI turns every `HarnessError` into one line and an exit code.
 * Anchor: anthropic-sdk-typescript `src/core/error.ts`.
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

/** The sandbox could not do its job: daemon unreachable, container gone and not recoverable, image build failed. */
export class SandboxError extends HarnessError {
  override readonly name = "SandboxError";
  /** The container involved, when there is one. */
  readonly containerId: string | undefined;
  constructor(message: string, options?: { cause?: unknown; containerId?: string | undefined }) {
    super(message, options);
    this.containerId = options?.containerId;
  }
}

/** The model API failed in a way retries did not cure (bad key, bad model, bad request, overloaded too long). */
export class ModelError extends HarnessError {
  override readonly name = "ModelError";
  /** HTTP status from the API, when there was a response. */
  readonly status: number | undefined;
  /** The API's `request-id` header, for support tickets. */
  readonly requestID: string | undefined;
  constructor(
    message: string,
    options?: { cause?: unknown; status?: number | undefined; requestID?: string | undefined },
  ) {
    super(message, options);
    this.status = options?.status;
    this.requestID = options?.requestID;
  }
}

/** The user cancelled (Ctrl-C) while harness was waiting on the model. */
export class CanceledError extends HarnessError {
  override readonly name = "CanceledError";
}
