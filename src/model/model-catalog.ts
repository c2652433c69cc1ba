/**
 * Learns a model's window and capabilities once per model and endpoint: from the cache in harness's
 * state, else from the Models API, else (an endpoint without it) from the built-in table;
 * `--context-window` wins over all of them for the window.
 */
import type { ModelCache } from "../state/model-cache.js";
import { type ModelProfile, tableProfile } from "./model-profile.js";

/** What a run learns about its model. */
export interface ModelLookup {
  /** The model's profile, the window from `--context-window` when given. */
  profile: ModelProfile;
  /** The endpoint answers the Models API (now, or when the cache was written). */
  modelsApi: boolean;
  /** Something the user should know: a window assumed, the Models API not reachable. */
  notice?: string;
}

export interface LookupOptions {
  /** The model id. */
  model: string;
  /** The endpoint (ANTHROPIC_BASE_URL, or Anthropic's own): answers are kept per endpoint. */
  endpoint: string;
  /** Asks the Models API: undefined when the endpoint does not answer it; rejects when unreachable. */
  describe: () => Promise<ModelProfile | undefined>;
  /** Where answers are kept between runs; without it, the API is asked every time. */
  cache?: ModelCache;
  /** `--context-window`. */
  contextWindow?: number | undefined;
}

/** Contract: never rejects; an API that cannot be asked falls back to the table, with a notice. */
export async function lookupModel(options: LookupOptions): Promise<ModelLookup> {
  const { model, endpoint, cache } = options;
  let answer = cache?.get(endpoint, model);
  let notice: string | undefined;
  if (answer === undefined) {
    try {
      answer = (await options.describe()) ?? null;
      cache?.set(endpoint, model, answer);
    } catch (error) {
      notice = `the Models API could not be asked about ${model} (${(error as Error).message}): using harness's own tools and table`;
    }
  }
  const profile: ModelProfile = answer ?? tableProfile(model);
  const lookup: ModelLookup = { profile: { ...profile }, modelsApi: answer !== undefined && answer !== null };
  if (options.contextWindow !== undefined) {
    lookup.profile.contextWindow = options.contextWindow;
    lookup.profile.windowSource = "flag";
  } else if (profile.windowSource === "default") {
    notice ??= `the context window of ${model} is not known: assuming ${profile.contextWindow.toLocaleString("en-US")} tokens (--context-window N sets it)`;
  }
  if (notice !== undefined) lookup.notice = notice;
  return lookup;
}
