import { describe, expect, it } from "vitest";
import { encodeFrame, type Frame, FrameDecoder } from "../../../../src/sandbox/executor/executor-frames.js";

function decodeAll(chunks: Buffer[]): { frames: Frame[]; leftover: number } {
  const frames: Frame[] = [];
  const decoder = new FrameDecoder((frame) => frames.push({ ...frame, payload: Buffer.from(frame.payload) }));
  for (const chunk of chunks) decoder.push(chunk);
  return { frames, leftover: decoder.leftoverBytes };
}

describe("executor frames", () => {
  const nonce = "0123456789abcdef";
  const wire = Buffer.concat([
    encodeFrame("o", nonce, Buffer.from("hello\n")),
    encodeFrame("e", nonce, Buffer.alloc(70_000, 1)),
    encodeFrame("X", nonce, JSON.stringify({ code: 3 })),
    encodeFrame("o", nonce, Buffer.alloc(0)),
  ]);

  it("round-trips kind, nonce and payload, whole", () => {
    const { frames, leftover } = decodeAll([wire]);
    expect(frames.map((f) => [f.kind, f.nonce, f.payload.length])).toEqual([
      ["o", nonce, 6],
      ["e", nonce, 70_000],
      ["X", nonce, 10],
      ["o", nonce, 0],
    ]);
    expect(frames[2]?.payload.toString()).toBe('{"code":3}');
    expect(leftover).toBe(0);
  });

  it.each([1, 7, 21, 22, 4096, 65_536])(
    "gives the same frames when the stream is cut every %i bytes",
    (size) => {
      const chunks: Buffer[] = [];
      for (let at = 0; at < wire.length; at += size) chunks.push(wire.subarray(at, at + size));
      const whole = decodeAll([wire]).frames;
      const cut = decodeAll(chunks).frames;
      expect(cut.map((f) => [f.kind, f.nonce, f.payload.toString("hex")])).toEqual(
        whole.map((f) => [f.kind, f.nonce, f.payload.toString("hex")]),
      );
    },
  );

  it("keeps an unfinished frame as leftover, not as a frame", () => {
    const { frames, leftover } = decodeAll([wire.subarray(0, wire.length - 3)]);
    expect(frames).toHaveLength(3);
    expect(leftover).toBeGreaterThan(0);
  });
});
