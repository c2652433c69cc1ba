/**
 * The tests' own answer to "could a program get the secret's value back out of these bytes?",
 * written independently of the gateway's scanner: undo each common escaping (percent, `%u`, JSON and
 * C escapes, HTML entities, quoted-printable) once, decompress what decompresses, then look in every
 * view for the value as is, in any case, reversed, as hex, and inside every base64 run (either
 * alphabet, any alignment, line breaks and `\n` escapes ignored).
 */
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";

/** The first way `value` comes back out of `bytes` (its name), or undefined when none does. */
export function recoverValue(bytes: Buffer | string, value: string): string | undefined {
  const raw = typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes;
  const views: Array<[string, Buffer]> = [["raw", raw]];
  for (const [name, decompress] of DECOMPRESSORS) {
    try {
      views.push([name, decompress(raw)]);
    } catch {}
  }
  const needle = Buffer.from(value, "utf8");
  for (const [name, view] of views) {
    for (const [unescaped, text] of unescapedViews(view)) {
      const found = findIn(text, needle);
      if (found !== undefined) return `${name}/${unescaped}/${found}`;
    }
  }
  return undefined;
}

const DECOMPRESSORS: Array<[string, (b: Buffer) => Buffer]> = [
  ["gunzip", gunzipSync],
  ["inflate", inflateSync],
  ["inflate-raw", inflateRawSync],
  ["brotli", brotliDecompressSync],
];

/** Each undoes one kind of escaping in a latin1 text, giving bytes (UTF-8 where it names code points). */
const UNDO: Array<[string, (text: string) => Buffer]> = [
  [
    "percent",
    (text) =>
      Buffer.from(
        text.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
        "latin1",
      ),
  ],
  [
    "percent-u",
    (text) =>
      utf8(
        text.replace(/%u([0-9a-fA-F]{4})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
      ),
  ],
  [
    "json",
    (text) =>
      utf8(
        text.replace(
          /\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[0-7]{3}|[\\/"'bfnrt])/g,
          (_, e: string) => {
            if (e.startsWith("u{")) return String.fromCodePoint(Number.parseInt(e.slice(2, -1), 16));
            if (e.startsWith("u") || e.startsWith("x"))
              return String.fromCharCode(Number.parseInt(e.slice(1), 16));
            if (/^[0-7]{3}$/.test(e)) return String.fromCharCode(Number.parseInt(e, 8));
            const short: Record<string, string> = { b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
            return short[e] ?? e;
          },
        ),
      ),
  ],
  [
    "html",
    (text) =>
      utf8(
        text
          .replace(/&#[xX]([0-9a-fA-F]+);?/g, (_, h: string) => String.fromCodePoint(Number.parseInt(h, 16)))
          .replace(/&#([0-9]+);?/g, (_, d: string) => String.fromCodePoint(Number.parseInt(d, 10)))
          .replace(/&([A-Za-z]+);/g, (all, name: string) => HTML_NAMES[name] ?? all),
      ),
  ],
  [
    "quoted-printable",
    (text) =>
      Buffer.from(
        text
          .replace(/=\r?\n/g, "")
          .replace(/=([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
        "latin1",
      ),
  ],
];

/** A string's code points as UTF-8 bytes, except that code points below 256 stay one byte each. */
function utf8(text: string): Buffer {
  return Buffer.from(
    [...text]
      .map((c) => ((c.codePointAt(0) ?? 0) < 256 ? c : Buffer.from(c, "utf8").toString("latin1")))
      .join(""),
    "latin1",
  );
}

/** The view as is, undone of each kind of escaping, and undone of all of them in turn (a mix). */
function unescapedViews(view: Buffer): Array<[string, Buffer]> {
  const views: Array<[string, Buffer]> = [["as-is", view]];
  let all = view;
  for (const [name, undo] of UNDO) {
    views.push([name, undo(view.toString("latin1"))]);
    all = undo(all.toString("latin1"));
  }
  views.push(["all escapes", all]);
  return views;
}

const HTML_NAMES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  sol: "/",
  plus: "+",
  equals: "=",
  colon: ":",
  period: ".",
  lowbar: "_",
  num: "#",
  excl: "!",
  percnt: "%",
  dollar: "$",
  ast: "*",
  comma: ",",
  semi: ";",
  quest: "?",
  commat: "@",
};

/** Where `needle` is in `text` by any of the value-level encodings, or undefined. */
function findIn(text: Buffer, needle: Buffer): string | undefined {
  const lower = text.toString("latin1").toLowerCase();
  const value = needle.toString("latin1").toLowerCase();
  if (lower.includes(value)) return "value";
  if (lower.includes([...value].reverse().join(""))) return "reversed";
  if (lower.includes(needle.toString("hex"))) return "hex";
  if (lower.replace(/[\s:]/g, "").includes(needle.toString("hex"))) return "spaced hex";
  // Base64 runs: JSON's "\n" escapes and line breaks removed, url-safe letters mapped, each offset.
  const runs = text
    .toString("latin1")
    .replace(/\\[nr]/g, "")
    .replace(/[\r\n\t ]/g, "")
    .match(/[A-Za-z0-9+/_-]{8,}/g);
  for (const run of runs ?? []) {
    const standard = run.replaceAll("-", "+").replaceAll("_", "/");
    for (let offset = 0; offset < 4; offset += 1) {
      const decoded = Buffer.from(standard.slice(offset), "base64");
      if (decoded.includes(needle)) return `base64 at offset ${offset}`;
    }
  }
  return undefined;
}
