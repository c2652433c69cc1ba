/**
 * Counts the time a run spends waiting for the Messages API (`duration_api_ms` in the result), by
 * wrapping the model client: the loop gives no event when a request starts.
 */
import type { ModelClient } from "../model/model-client.js";

export interface TimedModelClient {
  /** The same model client; every `complete` call is timed, failed and cancelled ones included. */
  client: ModelClient;
  /** Milliseconds spent in `complete` calls so far. */
  elapsedMs(): number;
}

export function timeModelCalls(
  model: ModelClient,
  now: () => number = () => performance.now(),
): TimedModelClient {
  let total = 0;
  return {
    client: {
      async complete(request, handlers) {
        const start = now();
        try {
          return await model.complete(request, handlers);
        } finally {
          total += now() - start;
        }
      },
    },
    elapsedMs: () => total,
  };
}
