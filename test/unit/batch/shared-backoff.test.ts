import { describe, expect, it } from "vitest";
import { withSharedBackoff } from "../../../src/batch/backoff-model-client.js";
import { SharedBackoff } from "../../../src/batch/shared-backoff.js";
import { CanceledError, ModelError } from "../../../src/errors.js";
import type { ModelClient, ModelRequest, ModelResponse } from "../../../src/model/model-client.js";

const request = (signal?: AbortSignal): ModelRequest => ({
  system: "",
  messages: [{ role: "user", content: "hi" }],
  tools: [],
  maxTokens: 10,
  ...(signal ? { signal } : {}),
});

const response: ModelResponse = {
  id: "m",
  model: "x",
  content: [],
  stopReason: "end_turn",
  usage: { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
};

/** A client answering from a script of errors and responses, logging each call under `name`. */
function scripted(name: string, log: string[], steps: Array<ModelResponse | Error>): ModelClient {
  return {
    async complete() {
      log.push(name);
      const step = steps.shift() ?? response;
      if (step instanceof Error) throw step;
      return step;
    },
  };
}

describe("SharedBackoff", () => {
  it("a 429 to one task holds the others until the wait the API asked for, then releases them in order", async () => {
    const backoff = new SharedBackoff();
    const log: string[] = [];
    const limited = new ModelError("rate limited (429)", { status: 429, retryAfterMs: 80 });
    const a = withSharedBackoff(scripted("a", log, [limited]), backoff);
    const b = withSharedBackoff(scripted("b", log, []), backoff);
    const first = a.complete(request());
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(backoff.paused).toBe(true);
    const second = b.complete(request());
    await Promise.all([first, second]);
    // a's retry was waiting first, so it goes first; b never went during the pause.
    expect(log).toEqual(["a", "a", "b"]);
    expect(backoff.pauses).toBe(1);
  });

  it("a 500 waits for its own task only", async () => {
    const backoff = new SharedBackoff();
    const log: string[] = [];
    const failing = withSharedBackoff(
      scripted("a", log, [new ModelError("server error (500)", { status: 500, retryAfterMs: 1 })]),
      backoff,
    );
    await failing.complete(request());
    expect(backoff.pauses).toBe(0);
    expect(log).toEqual(["a", "a"]);
  });

  it("gives up after maxRetries and says how often it retried; 400 is never retried", async () => {
    const backoff = new SharedBackoff();
    const log: string[] = [];
    const overloaded = () =>
      new ModelError("the API is overloaded (529): Overloaded", { status: 529, retryAfterMs: 1 });
    const client = withSharedBackoff(
      scripted("a", log, [overloaded(), overloaded(), overloaded()]),
      backoff,
      {
        maxRetries: 2,
      },
    );
    const error = await client.complete(request()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toMatch(/after 2 retries, shared across the batch/);
    expect((error as ModelError).status).toBe(529);
    const bad = withSharedBackoff(scripted("b", log, [new ModelError("bad", { status: 400 })]), backoff);
    await expect(bad.complete(request())).rejects.toThrow("bad");
    expect(log.filter((n) => n === "b")).toHaveLength(1);
  });

  it("a waiting request ends with CanceledError when its signal aborts", async () => {
    const backoff = new SharedBackoff();
    backoff.pause(10_000);
    const controller = new AbortController();
    const waiting = backoff.ready(controller.signal);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(CanceledError);
  });

  it("keeps the longest pause", () => {
    let now = 1000;
    const backoff = new SharedBackoff({ now: () => now, setTimeout: () => 0, clearTimeout: () => {} });
    backoff.pause(500);
    backoff.pause(100);
    now = 1400;
    expect(backoff.paused).toBe(true);
    now = 1500;
    expect(backoff.paused).toBe(false);
    expect(backoff.pausedMs).toBe(500);
  });
});
