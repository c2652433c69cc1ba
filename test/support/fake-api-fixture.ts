/** The fake Messages API for one end-to-end test at a time, and the env that points the CLI at it. */
import { afterEach, beforeEach } from "vitest";
import { type FakeMessagesApi, startFakeMessagesApi } from "./fake-messages-api.js";

export const E2E_KEY = "sk-ant-e2e-test-key";
/** A real model id, so the price table knows it. */
export const E2E_MODEL = "claude-sonnet-4-6";

export interface FakeApiFixture {
  /** The server of the running test. */
  readonly api: FakeMessagesApi;
  /** ANTHROPIC_API_KEY, MODEL_ID and ANTHROPIC_BASE_URL for the CLI. */
  readonly env: Record<string, string>;
}

/** Call inside a `describe`: starts a fresh fake API before each test and closes it after. */
export function useFakeApi(): FakeApiFixture {
  let api: FakeMessagesApi | undefined;
  beforeEach(async () => {
    api = await startFakeMessagesApi({ apiKey: E2E_KEY, models: [E2E_MODEL] });
  });
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });
  const current = () => {
    if (!api) throw new Error("useFakeApi(): the fake API only runs inside a test");
    return api;
  };
  return {
    get api() {
      return current();
    },
    get env() {
      return { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: E2E_MODEL, ANTHROPIC_BASE_URL: current().url };
    },
  };
}
