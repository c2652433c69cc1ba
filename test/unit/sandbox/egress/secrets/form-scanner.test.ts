/**
 * The scanner that finds a value in every form a program could decode back, in whole texts and in
 * streams split anywhere; and the same form of the placeholder written in its place.
 */
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, expect, it } from "vitest";
import { FormScanner } from "../../../../../src/sandbox/egress/secrets/forms/form-scanner.js";
import {
  firstForm,
  maskedText,
  maskingStream,
  watchingStream,
} from "../../../../../src/sandbox/egress/secrets/forms/form-streams.js";
import { rewritten, valueForms } from "../../../../../src/sandbox/egress/secrets/forms/value-forms.js";
import { recoverValue } from "../../../../support/egress/value-oracle.js";

const VALUE = "tok_R3aL/v4lue+9d8c.7b6a-5f4e";
/** Same length modulo 3 as VALUE, as the gateway's placeholders are. */
const PLACEHOLDER = "harness-secret-T-0123456789abcdef0123456789abcdef0";

const scanner = new FormScanner(valueForms(Buffer.from(VALUE), "T"));
const mask = (text: string): string =>
  maskedText(scanner, text, (chain) => rewritten(chain, () => Buffer.from(PLACEHOLDER)));

const enc = (s: string): Buffer => Buffer.from(s, "utf8");
const pct = (s: string, every = 1): string =>
  [...enc(s)]
    .map((b, i) => (i % every === 0 ? `%${b.toString(16).padStart(2, "0")}` : String.fromCharCode(b)))
    .join("");

/** Texts that carry the value, each with what a program would do to get it back. */
const CARRIERS: Array<[string, string]> = [
  ["as is", `x ${VALUE} y`],
  ["upper-case", `x ${VALUE.toUpperCase()} y`],
  ["reversed", `x ${[...VALUE].reverse().join("")} y`],
  ["hex", `x ${enc(VALUE).toString("hex")} y`],
  ["HEX", `x ${enc(VALUE).toString("hex").toUpperCase()} y`],
  [
    "hex with colons",
    enc(VALUE)
      .toString("hex")
      .replace(/(..)(?!$)/g, "$1:"),
  ],
  ["percent every byte", pct(VALUE)],
  ["percent some bytes", pct(VALUE, 3)],
  ["percent %u", [...VALUE].map((c) => `%u00${c.charCodeAt(0).toString(16)}`).join("")],
  ["JSON \\u", [...VALUE].map((c) => `\\u00${c.charCodeAt(0).toString(16)}`).join("")],
  ["JSON \\u{}", [...VALUE].map((c) => `\\u{${c.charCodeAt(0).toString(16)}}`).join("")],
  ["JSON \\/", JSON.stringify(VALUE).replaceAll("/", "\\/")],
  ["\\x", [...VALUE].map((c) => `\\x${c.charCodeAt(0).toString(16)}`).join("")],
  ["octal", [...VALUE].map((c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`).join("")],
  ["HTML decimal", [...VALUE].map((c) => `&#${c.charCodeAt(0)};`).join("")],
  ["HTML hex, no semicolons", [...VALUE].map((c) => `&#x${c.charCodeAt(0).toString(16)}`).join("")],
  ["HTML named", VALUE.replaceAll("/", "&sol;").replaceAll("+", "&plus;").replaceAll(".", "&period;")],
  [
    "every escape mixed",
    [...VALUE]
      .map((c, i) => {
        const code = c.charCodeAt(0);
        const hex = code.toString(16).padStart(2, "0");
        const spellings = [
          c,
          `%${hex}`,
          `\\u00${hex}`,
          `&#${code};`,
          `=${hex.toUpperCase()}`,
          `\\x${hex}`,
          `%u00${hex}`,
        ];
        return spellings[i % spellings.length];
      })
      .join(""),
  ],
  [
    "quoted-printable",
    `${pct(VALUE).replaceAll("%", "=").toUpperCase().slice(0, 30)}=\r\n${pct(VALUE).replaceAll("%", "=").toUpperCase().slice(30)}`,
  ],
];
for (const lead of ["", "a", "ab", "abc", "x-access-token:", "u:"]) {
  CARRIERS.push([`base64 after "${lead}"`, enc(`${lead}${VALUE}!`).toString("base64")]);
  CARRIERS.push([`base64url after "${lead}", unpadded`, enc(`${lead}${VALUE}`).toString("base64url")]);
  CARRIERS.push([`base64 after "${lead}", at the end, padded`, enc(`${lead}${VALUE}`).toString("base64")]);
  CARRIERS.push([
    `MIME base64 after "${lead}"`,
    enc(`${lead}${VALUE}${VALUE}`)
      .toString("base64")
      .replace(/(.{7})/g, "$1\r\n"),
  ]);
  CARRIERS.push([
    `base64 in JSON with \\n escapes after "${lead}"`,
    JSON.stringify(
      enc(`${lead}${VALUE}`)
        .toString("base64")
        .replace(/(.{5})/g, "$1\n"),
    ),
  ]);
  CARRIERS.push([`percent-encoded base64 after "${lead}"`, pct(enc(`${lead}${VALUE}`).toString("base64"))]);
}

describe("FormScanner", () => {
  it.each(CARRIERS)("finds and masks the value: %s", (_what, text) => {
    expect(recoverValue(text, VALUE), "the test's own oracle sees it before").toBeDefined();
    expect(firstForm(scanner, text)).toBeDefined();
    const masked = mask(text);
    expect(recoverValue(masked, VALUE), masked).toBeUndefined();
  });

  it("writes the placeholder in the same form, the neighbours untouched", () => {
    for (const lead of ["", "a", "ab", "x-access-token:"]) {
      const masked = mask(enc(`${lead}${VALUE}!?`).toString("base64"));
      expect(Buffer.from(masked, "base64").toString()).toBe(`${lead}${PLACEHOLDER}!?`);
      for (const between of ["", "-", "--", "---", "----"]) {
        const twice = mask(enc(`${lead}${VALUE}${between}${VALUE}.`).toString("base64"));
        expect(Buffer.from(twice, "base64").toString()).toBe(
          `${lead}${PLACEHOLDER}${between}${PLACEHOLDER}.`,
        );
      }
      const url = mask(enc(`${lead}${VALUE}`).toString("base64url"));
      expect(Buffer.from(url, "base64url").toString()).toBe(`${lead}${PLACEHOLDER}`);
    }
    expect(mask(`a ${enc(VALUE).toString("hex").toUpperCase()} b`)).toBe(
      `a ${enc(PLACEHOLDER).toString("hex").toUpperCase()} b`,
    );
    expect(JSON.parse(mask(JSON.stringify({ v: VALUE }).replaceAll("/", "\\/")))).toEqual({ v: PLACEHOLDER });
    expect(mask(`Bearer ${pct(VALUE)}`)).toBe(`Bearer ${PLACEHOLDER}`);
  });

  it("leaves text without the value alone, byte for byte, also around near misses", () => {
    const near = `${VALUE.slice(0, -1)}X ${enc(VALUE.slice(1)).toString("base64")} %41%42 &amp; =3D \\u0041`;
    expect(mask(near)).toBe(near);
    const random = randomBytes(1 << 16);
    expect(maskedText(scanner, random.toString("latin1"), () => Buffer.from("!"))).toBe(
      random.toString("latin1"),
    );
  });

  it("takes a literal escape-like value as itself", () => {
    const odd = new FormScanner(valueForms(Buffer.from("ab=3Dcd%41ef"), "T"));
    expect(firstForm(odd, "x ab=3Dcd%41ef y")).toBeDefined();
    expect(firstForm(odd, "x ab%3D3Dcd%2541ef y")).toBeDefined();
    expect(firstForm(odd, "x ab=3D3Dcd=2541ef y")).toBeDefined();
  });
});

async function through(stream: NodeJS.ReadWriteStream, chunks: Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(Readable.from(chunks), stream, async (source: AsyncIterable<Buffer | string>) => {
    for await (const chunk of source) out.push(Buffer.from(chunk));
  });
  return Buffer.concat(out);
}

describe("the scanner's streams", () => {
  it("masks a value split across chunks at every boundary, in every form", async () => {
    for (const [what, text] of CARRIERS) {
      const bytes = Buffer.from(`head ${text} tail`, "latin1");
      for (let cut = 1; cut < bytes.length; cut += 3) {
        const stream = maskingStream(scanner, (chain) => rewritten(chain, () => Buffer.from(PLACEHOLDER)));
        const out = await through(stream, [bytes.subarray(0, cut), bytes.subarray(cut)]);
        expect(recoverValue(out, VALUE), `${what} cut at ${cut}`).toBeUndefined();
      }
      const byteByByte = maskingStream(scanner, () => Buffer.from("[masked]"));
      const out = await through(
        byteByByte,
        [...bytes].map((b) => Buffer.from([b])),
      );
      expect(recoverValue(out, VALUE), `${what} byte by byte`).toBeUndefined();
    }
  });

  it("passes text without the value through whole, holding back only what might begin it", async () => {
    const text = Buffer.from(`${"plain words, nothing to see. ".repeat(1000)}end`);
    const stream = maskingStream(scanner, () => Buffer.from("!"));
    const seen: number[] = [];
    stream.on("data", (c: Buffer) => seen.push(c.length));
    const out = await through(stream, [text.subarray(0, 5000), text.subarray(5000)]);
    expect(out.equals(text)).toBe(true);
    expect(seen[0]).toBeGreaterThan(4900);
  });

  it("holds back a bounded number of bytes, whatever an origin pads a partial value with", async () => {
    const prefix = enc(`u:${VALUE}`).toString("base64").slice(0, 20);
    for (const filler of [" ", "\r\n", "=\r\n", "%20", "&#10;"]) {
      const stream = maskingStream(scanner, () => Buffer.from("!"));
      let before = 0;
      stream.on("data", (c: Buffer) => {
        before += c.length;
      });
      const chunks = [
        Buffer.from(prefix),
        ...Array.from({ length: 200 }, () => Buffer.from(filler.repeat(50))),
      ];
      for (const chunk of chunks) stream.write(chunk);
      await new Promise((resolve) => setImmediate(resolve));
      const total = chunks.reduce((sum, c) => sum + c.length, 0);
      expect(total - before, filler).toBeLessThan(1024);
      stream.end();
    }
  });

  it("fails a watched stream before the last byte of the value passes", async () => {
    const bytes = enc(`before ${enc(`u:${VALUE}`).toString("base64")} after`);
    const sent: Buffer[] = [];
    const watch = watchingStream(scanner, () => new Error("leak"));
    watch.on("data", (c: Buffer) => sent.push(c));
    await expect(
      through(
        watch,
        [...bytes].map((b) => Buffer.from([b])),
      ),
    ).rejects.toThrow("leak");
    expect(recoverValue(Buffer.concat(sent), VALUE)).toBeUndefined();
    // What went out is at most the part before the value's first character.
    expect(Buffer.concat(sent).length).toBeLessThan(12);
  });
});
