import { describe, expect, it } from "vitest";
import { OutputBuffer } from "../../../../src/sandbox/exec/output-buffer.js";
import { randomChunks, seededRandom } from "./random-chunks.js";

function written(headBytes: number, tailBytes: number, chunks: Array<string | Buffer>): OutputBuffer {
  const buffer = new OutputBuffer(headBytes, tailBytes);
  for (const chunk of chunks) buffer.write(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return buffer;
}

function cutLine(dropped: number, total: number): string {
  return `\n[... ${dropped} bytes of output cut here; ${total} bytes in all ...]\n`;
}

/** What the buffer should show for ASCII input: the first H and the last T bytes of it all. */
function reference(all: string, headBytes: number, tailBytes: number): string {
  if (all.length <= headBytes + tailBytes) return all;
  const tail = tailBytes === 0 ? "" : all.slice(-tailBytes);
  return `${all.slice(0, headBytes)}${cutLine(all.length - headBytes - tailBytes, all.length)}${tail}`;
}

const CUT = /^([\s\S]*)\n\[\.\.\. (\d+) bytes of output cut here; (\d+) bytes in all \.\.\.\]\n([\s\S]*)$/;

describe("OutputBuffer", () => {
  it("keeps every byte while under the cap", () => {
    const buffer = written(8, 8, ["hello ", "wor", "ld"]);
    expect(buffer.toString()).toBe("hello world");
    expect(buffer.totalBytes).toBe(11);
    expect(buffer.droppedBytes).toBe(0);
    expect(buffer.isTruncated).toBe(false);
  });

  it("is not truncated at exactly the head size, nor at exactly head + tail", () => {
    const buffer = written(5, 5, ["12345"]);
    expect(buffer.toString()).toBe("12345");
    expect(buffer.isTruncated).toBe(false);
    buffer.write(Buffer.from("67890"));
    expect(buffer.toString()).toBe("1234567890");
    expect(buffer.isTruncated).toBe(false);
    buffer.write(Buffer.from("a"));
    expect(buffer.isTruncated).toBe(true);
    expect(buffer.droppedBytes).toBe(1);
    expect(buffer.toString()).toBe(`12345${cutLine(1, 11)}7890a`);
  });

  it("says how many bytes were cut and how many there were in all", () => {
    const buffer = written(3, 3, ["abcdefghij"]);
    expect(buffer.toString()).toBe(`abc${cutLine(4, 10)}hij`);
    expect(buffer.totalBytes).toBe(10);
    expect(buffer.droppedBytes).toBe(4);
  });

  it("keeps the first head and last tail bytes over many wraps of the ring, with odd chunk sizes", () => {
    const random = seededRandom(42);
    const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789\n";
    for (const [headBytes, tailBytes] of [
      [0, 1],
      [1, 0],
      [0, 0],
      [5, 7],
      [17, 13],
      [3, 64],
    ] as const) {
      for (let round = 0; round < 20; round++) {
        const length = Math.floor(random() * 60 * (tailBytes + 3));
        const all = Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join("");
        const chunks = randomChunks(Buffer.from(all), random, 2 * tailBytes + 3);
        const buffer = written(headBytes, tailBytes, chunks);
        const label = `head ${headBytes}, tail ${tailBytes}, chunks ${chunks.map((c) => c.length).join(",")}`;
        expect(buffer.toString(), label).toBe(reference(all, headBytes, tailBytes));
        expect(buffer.totalBytes).toBe(length);
        expect(buffer.droppedBytes).toBe(Math.max(0, length - headBytes - tailBytes));
      }
    }
  });

  it("keeps head and tail of a single chunk larger than both together", () => {
    const all = "0123456789".repeat(10);
    expect(written(4, 6, [all]).toString()).toBe(reference(all, 4, 6));
    // The same after the head and ring are partly filled.
    expect(written(4, 6, ["ab", "cdefg", all]).toString()).toBe(reference(`abcdefg${all}`, 4, 6));
  });

  it("never cuts a multi-byte character into replacement characters at the head end or tail start", () => {
    for (const char of ["é", "€", "😀"]) {
      for (let before = 0; before < 4; before++) {
        for (let after = 0; after < 4; after++) {
          const text = `${"x".repeat(before)}${char.repeat(12)}${"y".repeat(after)}`;
          const shown = written(6, 6, [text]).toString();
          const label = `${char} with ${before} before, ${after} after: ${JSON.stringify(shown)}`;
          expect(shown, label).not.toContain("\uFFFD");
          const [, head = "", dropped = "", total = "", tail = ""] = CUT.exec(shown) ?? [];
          expect(text.startsWith(head), label).toBe(true);
          expect(text.endsWith(tail), label).toBe(true);
          // Only the partial character is left out at each cut.
          expect(Buffer.byteLength(head)).toBeGreaterThan(6 - Buffer.byteLength(char));
          expect(Buffer.byteLength(tail)).toBeGreaterThan(6 - Buffer.byteLength(char));
          expect(Number(total)).toBe(Buffer.byteLength(text));
          // The count covers what is not shown, the partial characters at the cuts included.
          expect(Number(dropped)).toBe(
            Buffer.byteLength(text) - Buffer.byteLength(head) - Buffer.byteLength(tail),
          );
        }
      }
    }
  });

  it("joins a character split between head and ring when nothing was cut", () => {
    const text = "abcé€😀";
    for (let headBytes = 0; headBytes <= Buffer.byteLength(text); headBytes++) {
      const bytes = Buffer.from(text);
      const buffer = written(headBytes, 20, [bytes.subarray(0, 4), bytes.subarray(4)]);
      expect(buffer.toString()).toBe(text);
    }
  });

  it("shows NULs and invalid UTF-8 as \\xNN escapes with their byte values, and counts them (issue 35)", () => {
    const bytes = Buffer.from([0x61, 0x00, 0x62, 0xff, 0xfe, 0x63]);
    expect(written(10, 10, [bytes]).decoded()).toEqual({ text: "a\\x00b\\xff\\xfec", notTextBytes: 3 });
    const long = Buffer.concat([
      Buffer.from("a\0b\xff", "latin1"),
      Buffer.alloc(50, "m"),
      Buffer.from("\0z"),
    ]);
    // Only what is kept is counted: the head's NUL and \xff, the tail's NUL.
    expect(written(4, 2, [long]).decoded()).toEqual({
      text: `a\\x00b\\xff${cutLine(50, 56)}\\x00z`,
      notTextBytes: 3,
    });
  });

  it("counts nothing for text, however many bytes its characters take", () => {
    const text = "é€😀\t\r\n\u001b[1m";
    expect(written(64, 64, [Buffer.from(text)]).decoded()).toEqual({ text, notTextBytes: 0 });
  });
});
