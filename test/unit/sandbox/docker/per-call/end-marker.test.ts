import { describe, expect, it } from "vitest";
import { EndMarkerScanner } from "../../../../../src/sandbox/docker/per-call/end-marker.js";
import { MARKER_LEAD } from "../../../../../src/sandbox/docker/per-call/wrapper-script.js";
import { randomChunks, seededRandom } from "../../exec/random-chunks.js";

const NONCE = "0123456789abcdef";
/** The stdout scanner's prefix, as runDockerExec builds it. */
const PREFIX = `${MARKER_LEAD}${NONCE}:`;

interface Scan {
  scanner: EndMarkerScanner;
  pieces: Buffer[];
  output: () => string;
}

function scanner(prefix = PREFIX): Scan {
  const pieces: Buffer[] = [];
  // Copy: a piece may be a view of a pushed chunk.
  const s = new EndMarkerScanner(prefix, (chunk) => pieces.push(Buffer.from(chunk)));
  return { scanner: s, pieces, output: () => Buffer.concat(pieces).toString() };
}

/** Push `chunks`, flush, and say what came out. */
function scan(chunks: Array<string | Buffer>, prefix = PREFIX): { output: string; payload?: string } {
  const { scanner: s, output } = scanner(prefix);
  for (const chunk of chunks) s.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  s.flush();
  return s.payload === undefined ? { output: output() } : { output: output(), payload: s.payload };
}

/** Every way to cut `text` into two and three pieces. */
function* splits(text: string): Generator<Buffer[]> {
  const bytes = Buffer.from(text);
  for (let a = 0; a <= bytes.length; a++) {
    for (let b = a; b <= bytes.length; b++) {
      yield [bytes.subarray(0, a), bytes.subarray(a, b), bytes.subarray(b)];
    }
  }
}

describe("EndMarkerScanner", () => {
  it("passes output through and parses the marker's payload", () => {
    const { scanner: s, output } = scanner();
    s.push(Buffer.from(`build ok\n${PREFIX}0:0:/work\n`));
    expect(s.found).toBe(true);
    expect(s.payload).toBe("0:0:/work");
    expect(output()).toBe("build ok\n");
  });

  it("finds a marker split across chunks at every position", () => {
    const text = `line one\npartial${PREFIX}2:1:/w/a:b\nlate output`;
    for (const chunks of splits(text)) {
      expect(scan(chunks), chunks.map((c) => c.length).join(",")).toEqual({
        output: "line one\npartial",
        payload: "2:1:/w/a:b",
      });
    }
  });

  it("ends the output right before the marker when the command printed no final newline", () => {
    expect(scan([`no newline${PREFIX}0:0:/work\n`])).toEqual({ output: "no newline", payload: "0:0:/work" });
    expect(scan(["no newline", `${PREFIX}0:0:/work\n`])).toEqual({
      output: "no newline",
      payload: "0:0:/work",
    });
  });

  it.each([
    ["another nonce", `${MARKER_LEAD}fedcba9876543210:0:0:/x\n`],
    ["a nonce that differs in its last digit", `${MARKER_LEAD}0123456789abcdee:0:0:/x\n`],
    ["our nonce without the colon", `${MARKER_LEAD}${NONCE}0:0:/x\n`],
    ["the marker lead alone", `${MARKER_LEAD}\n`],
  ])("passes text that looks like the marker (%s) through as output", (_name, fake) => {
    const text = `a${fake}b${fake}`;
    for (const chunks of splits(text)) {
      expect(scan(chunks)).toEqual({ output: text });
    }
  });

  it("holds back a marker prefix at the end of a chunk, and flush emits it when nothing completes it", () => {
    for (let k = 1; k <= PREFIX.length; k++) {
      const { scanner: s, output } = scanner();
      s.push(Buffer.from(`tail${PREFIX.slice(0, k)}`));
      expect(output()).toBe("tail");
      s.flush();
      expect(output(), `prefix of ${k}`).toBe(`tail${PREFIX.slice(0, k)}`);
      expect(s.found).toBe(false);
    }
  });

  it("emits a whole marker line that never got its newline as output on flush", () => {
    expect(scan(["x", `${PREFIX}0:0:/wo`, "rk"])).toEqual({ output: `x${PREFIX}0:0:/work` });
  });

  it("emits nothing after the marker, in the same chunk, later chunks, or on flush", () => {
    const { scanner: s, pieces } = scanner();
    s.push(Buffer.from(`${PREFIX}0:0:/work\nbackground job output`));
    s.push(Buffer.from("more"));
    s.push(Buffer.from(`${PREFIX}1:0:/elsewhere\n`));
    s.flush();
    expect(pieces).toEqual([]);
    expect(s.payload).toBe("0:0:/work");
  });

  it("decodes a payload whose multi-byte cwd was split mid-character", () => {
    const line = Buffer.from(`${PREFIX}0:0:/tmp/café\n`);
    const cut = line.indexOf(0xa9); // the second byte of "é"
    expect(scan([line.subarray(0, cut), line.subarray(cut)])).toEqual({
      output: "",
      payload: "0:0:/tmp/café",
    });
  });

  it("matches the stderr scanner's shorter prefix (no colon)", () => {
    expect(scan([`oops\n${MARKER_LEAD}${NONCE}:\n`], `${MARKER_LEAD}${NONCE}`)).toEqual({
      output: "oops\n",
      payload: ":",
    });
  });

  it("agrees with indexOf on the whole input for a self-overlapping prefix and random chunking", () => {
    const random = seededRandom(7);
    for (let round = 0; round < 300; round++) {
      const text = Array.from({ length: 40 }, () => "ab\n"[Math.floor(random() * 3)]).join("");
      const all = Buffer.from(text);
      const at = text.indexOf("aab");
      const newline = at < 0 ? -1 : text.indexOf("\n", at + 3);
      const want =
        newline < 0 ? { output: text } : { output: text.slice(0, at), payload: text.slice(at + 3, newline) };
      expect(scan(randomChunks(all, random, 6), "aab"), text).toEqual(want);
    }
  });
});

describe("EndMarkerScanner's bound", () => {
  it("passes on a marker-looking line longer than any marker instead of holding it", () => {
    const { scanner: s, output } = scanner();
    const long = `${PREFIX}${"x".repeat(10_000)}`;
    s.push(Buffer.from(long.slice(0, 5000)));
    s.push(Buffer.from(long.slice(5000)));
    // Nothing is kept back once the line is too long to be a marker, and a real one still counts.
    expect(output()).toBe(long);
    s.push(Buffer.from(`${PREFIX}0:0:/work\n`));
    expect(s.payload).toBe("0:0:/work");
    expect(output()).toBe(long);
  });
});
