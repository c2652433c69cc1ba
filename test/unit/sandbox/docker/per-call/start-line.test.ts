import { describe, expect, it } from "vitest";
import { StartLineReader, type WrapperStart } from "../../../../../src/sandbox/docker/per-call/start-line.js";
import { START_LEAD } from "../../../../../src/sandbox/docker/per-call/wrapper-script.js";

const NONCE = "0123456789abcdef";
const LINE = `${START_LEAD}${NONCE}:812:4471932\n`;

function read(chunks: string[]): { start: WrapperStart | undefined; output: string } {
  const pieces: Buffer[] = [];
  const reader = new StartLineReader(START_LEAD, NONCE, (chunk) => pieces.push(Buffer.from(chunk)));
  for (const chunk of chunks) reader.push(Buffer.from(chunk));
  reader.flush();
  return { start: reader.start, output: Buffer.concat(pieces).toString() };
}

describe("StartLineReader", () => {
  it("takes the start line at the very beginning of stdout, in any split, and passes the rest on", () => {
    const text = `${LINE}output\n`;
    for (let cut = 0; cut <= text.length; cut++) {
      const { start, output } = read([text.slice(0, cut), text.slice(cut)]);
      expect(start, `cut at ${cut}`).toEqual({ pid: 812, startTime: "4471932" });
      expect(output).toBe("output\n");
    }
  });

  it.each([
    ["output came first", `hello\n${LINE}`],
    ["another call's nonce", `${START_LEAD}fedcba9876543210:812:4471932\n`],
    ["not numbers", `${START_LEAD}${NONCE}:812:$(reboot)\n`],
    ["no newline", `${START_LEAD}${NONCE}:812:${"4".repeat(300)}`],
    ["a cut-off line", `${START_LEAD}${NONCE}:81`],
  ])("reads no start from stdout that does not begin with one (%s); all of it is output", (_name, text) => {
    const { start, output } = read([text]);
    expect(start).toBeUndefined();
    expect(output).toBe(text);
  });

  it("says it is decided once stdout showed either way", async () => {
    const reader = new StartLineReader(START_LEAD, NONCE, () => {});
    const decided = reader.whenDecided();
    reader.push(Buffer.from(LINE.slice(0, 10)));
    reader.push(Buffer.from(LINE.slice(10)));
    await expect(decided).resolves.toEqual({ pid: 812, startTime: "4471932" });
  });
});
