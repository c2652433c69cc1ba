import { describe, expect, it } from "vitest";
import { Demuxer } from "../../../../../src/sandbox/docker/exec/demux.js";
import type { StreamName } from "../../../../../src/sandbox/exec/exec-types.js";
import { frame } from "./fake-docker.js";

interface Frame {
  stream: StreamName;
  payload: Buffer;
}

function demuxer(): { demuxer: Demuxer; frames: Frame[]; text: () => string[] } {
  const frames: Frame[] = [];
  // Copy: a payload may be a view of the pushed chunk.
  const d = new Demuxer((stream, payload) => frames.push({ stream, payload: Buffer.from(payload) }));
  return {
    demuxer: d,
    frames,
    text: () => frames.map((f) => `${f.stream}:${f.payload.toString()}`),
  };
}

const raw = Buffer.concat([frame(1, "hello "), frame(2, "warning\n"), frame(1, "world\n")]);
const expected = ["stdout:hello ", "stderr:warning\n", "stdout:world\n"];

describe("Demuxer", () => {
  it("splits several frames that arrive in one chunk, in order", () => {
    const { demuxer: d, text } = demuxer();
    d.push(raw);
    expect(text()).toEqual(expected);
    expect(d.leftoverBytes).toBe(0);
  });

  it("reassembles frames fed one byte at a time", () => {
    const { demuxer: d, text } = demuxer();
    for (const byte of raw) d.push(Buffer.from([byte]));
    expect(text()).toEqual(expected);
    expect(d.leftoverBytes).toBe(0);
  });

  it("reassembles frames split in two at every byte boundary", () => {
    for (let cut = 0; cut <= raw.length; cut++) {
      const { demuxer: d, text } = demuxer();
      d.push(raw.subarray(0, cut));
      d.push(raw.subarray(cut));
      expect(text(), `cut at ${cut}`).toEqual(expected);
      expect(d.leftoverBytes).toBe(0);
    }
  });

  it("reassembles frames split in three at every pair of byte boundaries", () => {
    for (let a = 0; a <= raw.length; a++) {
      for (let b = a; b <= raw.length; b++) {
        const { demuxer: d, text } = demuxer();
        d.push(raw.subarray(0, a));
        d.push(raw.subarray(a, b));
        d.push(raw.subarray(b));
        expect(text(), `cuts at ${a}, ${b}`).toEqual(expected);
      }
    }
  });

  it("gets past a zero-length frame without stalling or inventing output", () => {
    const { demuxer: d, frames } = demuxer();
    d.push(Buffer.concat([frame(1, "a"), frame(1, ""), frame(2, ""), frame(1, "b")]));
    const out = frames.filter((f) => f.stream === "stdout").map((f) => f.payload.toString());
    expect(out.join("")).toBe("ab");
    expect(frames.filter((f) => f.stream === "stderr").every((f) => f.payload.length === 0)).toBe(true);
    expect(d.leftoverBytes).toBe(0);
  });

  it("ignores stdin frames (type 0) and keeps the frames around them", () => {
    const { demuxer: d, text } = demuxer();
    d.push(Buffer.concat([frame(1, "before"), frame(0, "typed secret"), frame(2, "after")]));
    expect(text()).toEqual(["stdout:before", "stderr:after"]);
    expect(d.leftoverBytes).toBe(0);
  });

  it.each([
    ["one chunk", 1 << 30],
    ["64 KiB socket reads", 64 * 1024],
    ["odd-sized reads", 4099],
  ])("delivers a frame larger than 64 KiB whole (%s)", (_name, readSize) => {
    const payload = Buffer.alloc(200_000);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) % 251;
    const data = Buffer.concat([frame(2, payload), frame(1, "next")]);
    const { demuxer: d, frames } = demuxer();
    for (let at = 0; at < data.length; at += readSize) d.push(data.subarray(at, at + readSize));
    expect(frames).toHaveLength(2);
    expect(frames[0]?.stream).toBe("stderr");
    expect(frames[0]?.payload.equals(payload)).toBe(true);
    expect(frames[1]?.payload.toString()).toBe("next");
  });

  it("handles a frame exactly 64 KiB long next to one a byte longer", () => {
    const a = Buffer.alloc(65_536, "a");
    const b = Buffer.alloc(65_537, "b");
    const { demuxer: d, frames } = demuxer();
    d.push(Buffer.concat([frame(1, a), frame(1, b)]));
    expect(frames.map((f) => f.payload.length)).toEqual([65_536, 65_537]);
    expect(frames[1]?.payload.equals(b)).toBe(true);
  });

  it("reports the bytes of a frame cut off mid-payload as leftover, and finishes it later", () => {
    const { demuxer: d, text } = demuxer();
    const unfinished = frame(2, "unfinished");
    d.push(Buffer.concat([frame(1, "complete"), unfinished.subarray(0, 11)]));
    expect(text()).toEqual(["stdout:complete"]);
    expect(d.leftoverBytes).toBe(11);
    d.push(unfinished.subarray(11));
    expect(text()).toEqual(["stdout:complete", "stderr:unfinished"]);
    expect(d.leftoverBytes).toBe(0);
  });

  it("reports a header cut off mid-way as leftover", () => {
    const { demuxer: d, frames } = demuxer();
    d.push(frame(1, "x").subarray(0, 5));
    expect(frames).toHaveLength(0);
    expect(d.leftoverBytes).toBe(5);
  });
});
