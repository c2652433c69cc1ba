/**
 * The forms of one byte string (a secret's value, or its placeholder) that a program could decode
 * back: as is in any letter case, reversed, hex in either case, and base64 at each of the three byte
 * alignments a longer text can put it at (either alphabet, padded or not, line breaks anywhere).
 * Each form is a pattern of byte sets, one per symbol, that the scanner matches after undoing one
 * layer of character escaping (`escapes.ts`); and each knows how to write the same form of another
 * string in its place.
 *
 * Base64 alignment: a string that starts `lead` bytes into a 3-byte group shares its first and last
 * characters with its neighbours. Those edge characters are matched on the bits the string
 * contributes (a set of 4 or 16 characters), so nothing that carries a bit of it is left out, and
 * are rewritten keeping the neighbours' bits, so the text around still decodes as before.
 */

import { ESCAPE_START } from "./escapes.js";

export type FormKind = "text" | "reversed" | "hex" | "base64";

export interface ValueForm<Tag> {
  kind: FormKind;
  /** For base64: how many bytes of its 3-byte group come before the string (0, 1 or 2). */
  lead: number;
  /** One table per symbol: `sets[i][b]` is 1 when byte b may stand at position i. */
  sets: Uint8Array[];
  /** Symbols that may come between two matched ones and are passed over (line breaks in base64). */
  skip: Uint8Array | undefined;
  /**
   * The bytes that may come right after the first symbol (the second symbol, a separator, the start
   * of an escape): the scanner ends a try at once on any other.
   */
  follows: Uint8Array;
  /** The string this form is of. */
  bytes: Buffer;
  tag: Tag;
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/** A base64 symbol's 6-bit value, either alphabet; -1 for anything else. */
export const BASE64_VALUE: Int16Array = (() => {
  const table = new Int16Array(256).fill(-1);
  for (let i = 0; i < 64; i += 1) {
    table[BASE64.charCodeAt(i)] = i;
    table[BASE64_URL.charCodeAt(i)] = i;
  }
  return table;
})();

const WHITESPACE = table(" \t\r\n");
/** A hex dump may space or colon-separate its bytes. */
const HEX_SEPARATORS = table(" \t\r\n:");

function table(chars: string): Uint8Array {
  const t = new Uint8Array(256);
  for (const c of chars) t[c.charCodeAt(0)] = 1;
  return t;
}

function setOf(bytes: Iterable<number>): Uint8Array {
  const t = new Uint8Array(256);
  for (const b of bytes) t[b] = 1;
  return t;
}

/** A byte and, for an ASCII letter, its other case; a space may also be a form-encoded '+'. */
function caseless(b: number): Uint8Array {
  const all = [b];
  if ((b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) all.push(b ^ 0x20);
  if (b === 0x20) all.push(0x2b);
  return setOf(all);
}

type Shape<Tag> = Omit<ValueForm<Tag>, "follows">;

function withFollows<Tag>(shape: Shape<Tag>): ValueForm<Tag> {
  const follows = new Uint8Array(256);
  const second = shape.sets[1];
  for (let b = 0; b < 256; b += 1) {
    follows[b] = second === undefined || second[b] || shape.skip?.[b] || ESCAPE_START[b] ? 1 : 0;
  }
  return { ...shape, follows };
}

/** Every form of `bytes`, tagged with `tag` (what a match is reported as). */
export function valueForms<Tag>(bytes: Buffer, tag: Tag): ValueForm<Tag>[] {
  const reversed = Buffer.from([...bytes.toString("utf8")].reverse().join(""), "utf8");
  const hexSets = [...bytes.toString("hex")].map((c) =>
    setOf([c.charCodeAt(0), c.toUpperCase().charCodeAt(0)]),
  );
  const forms: Shape<Tag>[] = [
    { kind: "text", lead: 0, sets: [...bytes].map(caseless), skip: undefined, bytes, tag },
    { kind: "reversed", lead: 0, sets: [...reversed].map(caseless), skip: undefined, bytes, tag },
    { kind: "hex", lead: 0, sets: hexSets, skip: HEX_SEPARATORS, bytes, tag },
  ];
  for (let lead = 0; lead < 3; lead += 1) {
    forms.push({ kind: "base64", lead, sets: base64Sets(bytes, lead), skip: WHITESPACE, bytes, tag });
  }
  return forms.map(withFollows);
}

/**
 * The base64 characters that carry `bytes` when `lead` bytes of their group come first: for each,
 * the characters whose bits agree with those of `bytes` (the others' bits are free).
 */
function base64Sets(bytes: Buffer, lead: number): Uint8Array[] {
  const firstBit = 8 * lead;
  const endBit = firstBit + 8 * bytes.length;
  const bitAt = (i: number): number => ((bytes[(i - firstBit) >> 3] ?? 0) >> (7 - ((i - firstBit) & 7))) & 1;
  const sets: Uint8Array[] = [];
  for (let c = Math.floor(firstBit / 6); 6 * c < endBit; c += 1) {
    const allowed: number[] = [];
    for (let v = 0; v < 64; v += 1) {
      let agrees = true;
      for (let k = 0; k < 6 && agrees; k += 1) {
        const bit = 6 * c + k;
        if (bit >= firstBit && bit < endBit && ((v >> (5 - k)) & 1) !== bitAt(bit)) agrees = false;
      }
      if (agrees) allowed.push(BASE64.charCodeAt(v), BASE64_URL.charCodeAt(v));
    }
    sets.push(setOf(allowed));
  }
  return sets;
}

/** One match as `rewritten` needs it (the scanner's `FormMatch`). */
export interface MatchedForm<Tag> {
  form: ValueForm<Tag>;
  symbols: readonly number[];
}

/**
 * What replaces a chain of matches (one, or base64 matches sharing edge characters): the same form
 * of `other(tag)` for each. Text forms give it as is (reversed for a reversed match); hex keeps the
 * match's letter case; base64 keeps the neighbours' bits in the edge characters, and the alphabet.
 */
export function rewritten<Tag>(chain: readonly MatchedForm<Tag>[], other: (tag: Tag) => Buffer): Buffer {
  const [only] = chain;
  if (only === undefined) return Buffer.alloc(0);
  const replacement = other(only.form.tag);
  switch (only.form.kind) {
    case "text":
      return replacement;
    case "reversed":
      return Buffer.from([...replacement.toString("utf8")].reverse().join(""), "utf8");
    case "hex": {
      const { symbols } = only;
      const upper =
        symbols.some((s) => s >= 0x41 && s <= 0x46) && !symbols.some((s) => s >= 0x61 && s <= 0x66);
      const hex = replacement.toString("hex");
      return Buffer.from(upper ? hex.toUpperCase() : hex, "latin1");
    }
    case "base64":
      return rebase64(chain, other);
  }
}

/**
 * The chain's base64 characters as bits (a shared character once), each string's bits swapped for
 * its replacement's, encoded again. A replacement as long as its string modulo 3 bytes (the gateway's
 * placeholders are) keeps every character after it where it was.
 */
function rebase64<Tag>(chain: readonly MatchedForm<Tag>[], other: (tag: Tag) => Buffer): Buffer {
  const bits: number[] = [];
  let url = false;
  chain.forEach(({ form, symbols }, index) => {
    url ||= symbols.some((s) => s === 0x2d || s === 0x5f);
    const original: number[] = [];
    for (const s of symbols) {
      const v = Math.max(0, BASE64_VALUE[s] ?? 0);
      for (let k = 5; k >= 0; k -= 1) original.push((v >> k) & 1);
    }
    const leadBits = (8 * form.lead) % 6;
    const valueBits = 8 * form.bytes.length;
    // The character shared with the previous match is already in: from it, only what follows the
    // previous string's bits (that is, this one's lead bits) was kept there.
    if (index > 0) bits.length -= 6 - leadBits;
    else bits.push(...original.slice(0, leadBits));
    for (const byte of other(form.tag)) for (let k = 7; k >= 0; k -= 1) bits.push((byte >> k) & 1);
    bits.push(...original.slice(leadBits + valueBits));
  });
  while (bits.length % 6 !== 0) bits.push(0);
  const alphabet = url ? BASE64_URL : BASE64;
  let out = "";
  for (let i = 0; i < bits.length; i += 6) {
    let v = 0;
    for (let k = 0; k < 6; k += 1) v = v * 2 + (bits[i + k] ?? 0);
    out += alphabet[v];
  }
  return Buffer.from(out, "latin1");
}
