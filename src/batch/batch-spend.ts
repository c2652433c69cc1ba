/**
 * The batch's spending as it happens: every model response of every task is priced when it arrives,
 * so `--max-budget-usd` sees the cost of tasks still running, not only of those that ended.
 */
import type { ModelClient } from "../model/model-client.js";
import { costUsd, type ModelPricing } from "../model/pricing.js";

export class BatchSpend {
  #usd = 0;

  /** Estimated USD spent so far by this command. */
  get usd(): number {
    return this.#usd;
  }

  /** `client`, with each response's tokens priced at `pricing` and added here. */
  track(client: ModelClient, pricing: ModelPricing | undefined): ModelClient {
    if (pricing === undefined) return client;
    return {
      complete: async (request, handlers) => {
        const response = await client.complete(request, handlers);
        this.#usd += costUsd(pricing, response.usage);
        return response;
      },
    };
  }
}
