/**
 * The batch's retries, around a model client whose own retries are off (`maxRetries: 0`): 429 and 529
 * pause every task through the SharedBackoff; other retryable failures (408, 409, 5xx, no connection)
 * wait for this task alone. The waits follow the API's `retry-after` when it sent one, else the SDK's
 * schedule (0.5 s doubling to 8 s, with jitter).
 */
import { CanceledError, ModelError } from "../errors.js";
import type { ModelClient } from "../model/model-client.js";
import type { SharedBackoff } from "./shared-backoff.js";

export interface BackoffRetryOptions {
  /** Retries per request after the first attempt (default 4, as `run`). */
  maxRetries?: number;
  /** First wait without a retry-after, in ms (default 500). */
  baseDelayMs?: number;
  /** Longest wait, in ms, the API's retry-after included (default 60 s). */
  maxDelayMs?: number;
  /** Random number in [0, 1), for tests. */
  random?: () => number;
}

/** Statuses that shared backoff answers for everyone: the API's rate limit and its overload. */
const SHARED_STATUSES: ReadonlySet<number> = new Set([429, 529]);

/** True for the failures the SDK would retry: 408, 409, 429, 5xx, and no answer at all. */
function isRetryable(error: unknown): error is ModelError {
  if (!(error instanceof ModelError)) return false;
  const { status } = error;
  return status === undefined || status === 408 || status === 409 || status === 429 || status >= 500;
}

export function withSharedBackoff(
  client: ModelClient,
  backoff: SharedBackoff,
  options: BackoffRetryOptions = {},
): ModelClient {
  const maxRetries = options.maxRetries ?? 4;
  const base = options.baseDelayMs ?? 500;
  const max = options.maxDelayMs ?? 60_000;
  const random = options.random ?? Math.random;
  const delayFor = (error: ModelError, retry: number) => {
    const scheduled = Math.min(base * 2 ** retry, 8_000) * (1 - 0.25 * random());
    return Math.min(error.retryAfterMs ?? scheduled, max);
  };
  return {
    async complete(request, handlers) {
      for (let retry = 0; ; retry += 1) {
        await backoff.ready(request.signal);
        try {
          return await client.complete(request, handlers);
        } catch (error) {
          if (!isRetryable(error) || request.signal?.aborted) throw error;
          if (retry >= maxRetries) throw gaveUp(error, retry);
          const delay = delayFor(error, retry);
          if (error.status !== undefined && SHARED_STATUSES.has(error.status)) backoff.pause(delay);
          else await sleep(delay, request.signal);
        }
      }
    },
  };
}

/** The last error, saying how often it was retried (the client itself did not). */
function gaveUp(error: ModelError, retries: number): ModelError {
  if (retries === 0) return error;
  const shared =
    error.status !== undefined && SHARED_STATUSES.has(error.status) ? ", shared across the batch" : "";
  return new ModelError(
    `${error.message} (after ${retries} ${retries === 1 ? "retry" : "retries"}${shared})`,
    {
      cause: error,
      status: error.status,
      requestID: error.requestID,
      retryAfterMs: error.retryAfterMs,
    },
  );
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new CanceledError("the model request was canceled"));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CanceledError("the model request was canceled"));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
