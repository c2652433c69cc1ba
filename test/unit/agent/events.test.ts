import { describe, expect, it } from "vitest";
import { combineEvents, guardEvents } from "../../../src/agent/events.js";

describe("combineEvents", () => {
  it("calls every listener in order, skipping missing handlers", () => {
    const seen: string[] = [];
    const events = combineEvents(
      { onNotice: (text) => seen.push(`a:${text}`) },
      undefined,
      {},
      { onNotice: (text) => seen.push(`b:${text}`) },
    );
    events.onNotice("hi");
    events.onText("ignored");
    expect(seen).toEqual(["a:hi", "b:hi"]);
  });

  it("keeps going when a listener throws or rejects, and never throws itself", async () => {
    const seen: string[] = [];
    const events = combineEvents(
      {
        onNotice: () => {
          throw new Error("bug");
        },
      },
      { onNotice: async () => Promise.reject(new Error("async bug")) },
      { onNotice: (text) => seen.push(text) },
    );
    expect(() => events.onNotice("still here")).not.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(seen).toEqual(["still here"]);
  });

  it("calls handlers with their listener as `this`", () => {
    const listener = {
      count: 0,
      onText(this: { count: number }) {
        this.count += 1;
      },
    };
    combineEvents(listener).onText("x");
    expect(listener.count).toBe(1);
  });
});

describe("guardEvents", () => {
  it("gives every handler, even for no listener", () => {
    const events = guardEvents(undefined);
    expect(() => events.onRunEnd({} as never)).not.toThrow();
    expect(typeof events.onToolResult).toBe("function");
  });
});
