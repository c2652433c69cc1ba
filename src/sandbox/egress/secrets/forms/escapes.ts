/**
 * One layer of character escaping, read at a byte position: what servers and clients write for a
 * character they do not put as is. Percent-encoding (`%41`, IIS's `%u0041`), JSON, JavaScript,
 * Python and C escapes (`\u0041`, `\u{41}`, `\x41`, `\101`, `\/`, `\n`…), HTML character
 * references (`&#65;`, `&#x41`, `&sol;`, `&amp`), and quoted-printable (`=41`, and its soft line
 * break `=\r\n`, which stands for nothing). The scanner takes each either as what it stands for or
 * as its own bytes, so a value spelled with any mix of them, or none, is still seen.
 */

/** What is at a position: bytes an escape stands for, an escape that stands for nothing, neither, or "cannot tell yet". */
export type EscapeRead =
  | { kind: "bytes"; bytes: readonly number[]; length: number }
  | { kind: "skip"; length: number }
  | { kind: "none" }
  | { kind: "more" };

const NONE: EscapeRead = { kind: "none" };
const MORE: EscapeRead = { kind: "more" };

/** The first byte of every escape: only these positions are read as escapes at all. */
export const ESCAPE_START: Uint8Array = (() => {
  const table = new Uint8Array(256);
  for (const c of "%\\&=") table[c.charCodeAt(0)] = 1;
  return table;
})();

const SHORT: Record<string, number> = {
  "/": 0x2f,
  "\\": 0x5c,
  '"': 0x22,
  "'": 0x27,
  "`": 0x60,
  b: 0x08,
  f: 0x0c,
  n: 0x0a,
  r: 0x0d,
  t: 0x09,
  v: 0x0b,
};

/**
 * HTML's named references for the ASCII characters tokens and encodings are made of (the full table
 * is 2,000 names of letters no token holds); those HTML also reads without the semicolon are marked.
 */
const NAMED: Record<string, number> = {
  excl: 0x21,
  quot: 0x22,
  QUOT: 0x22,
  num: 0x23,
  dollar: 0x24,
  percnt: 0x25,
  amp: 0x26,
  AMP: 0x26,
  apos: 0x27,
  lpar: 0x28,
  rpar: 0x29,
  ast: 0x2a,
  midast: 0x2a,
  plus: 0x2b,
  comma: 0x2c,
  period: 0x2e,
  sol: 0x2f,
  colon: 0x3a,
  semi: 0x3b,
  lt: 0x3c,
  LT: 0x3c,
  equals: 0x3d,
  gt: 0x3e,
  GT: 0x3e,
  quest: 0x3f,
  commat: 0x40,
  lsqb: 0x5b,
  lbrack: 0x5b,
  bsol: 0x5c,
  rsqb: 0x5d,
  rbrack: 0x5d,
  Hat: 0x5e,
  lowbar: 0x5f,
  UnderBar: 0x5f,
  grave: 0x60,
  DiacriticalGrave: 0x60,
  lcub: 0x7b,
  lbrace: 0x7b,
  verbar: 0x7c,
  vert: 0x7c,
  VerticalLine: 0x7c,
  rcub: 0x7d,
  rbrace: 0x7d,
  Tab: 0x09,
  NewLine: 0x0a,
};
const WITHOUT_SEMICOLON = new Set(["amp", "AMP", "lt", "LT", "gt", "GT", "quot", "QUOT"]);
const LONGEST_NAME = Math.max(...Object.keys(NAMED).map((n) => n.length));

/** Reads the escape at `at`, if any; `final` says no more bytes will follow `buffer`. */
export function readEscape(buffer: Uint8Array, at: number, final: boolean): EscapeRead {
  switch (buffer[at]) {
    case 0x25:
      return percent(buffer, at, final);
    case 0x5c:
      return backslash(buffer, at, final);
    case 0x26:
      return reference(buffer, at, final);
    case 0x3d:
      return quotedPrintable(buffer, at, final);
    default:
      return NONE;
  }
}

/** `count` hex digits at `from`: their value, "more" when the buffer ends first, or undefined. */
function hexDigits(
  buffer: Uint8Array,
  from: number,
  count: number,
  final: boolean,
): number | "more" | undefined {
  let value = 0;
  for (let i = 0; i < count; i += 1) {
    const b = buffer[from + i];
    if (b === undefined) return final ? undefined : "more";
    const digit = hexValue(b);
    if (digit < 0) return undefined;
    value = value * 16 + digit;
  }
  return value;
}

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

function result(
  value: number | "more" | undefined,
  length: number,
  asBytes: (v: number) => number[] | undefined,
): EscapeRead {
  if (value === "more") return MORE;
  if (value === undefined) return NONE;
  const bytes = asBytes(value);
  return bytes === undefined ? NONE : { kind: "bytes", bytes, length };
}

const oneByte = (v: number): number[] => [v];

/** A code point's UTF-8 bytes; undefined for a lone surrogate or beyond Unicode. */
export function utf8(codePoint: number): number[] | undefined {
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) return undefined;
  if (codePoint < 0x80) return [codePoint];
  if (codePoint < 0x800) return [0xc0 | (codePoint >> 6), 0x80 | (codePoint & 0x3f)];
  if (codePoint < 0x10000)
    return [0xe0 | (codePoint >> 12), 0x80 | ((codePoint >> 6) & 0x3f), 0x80 | (codePoint & 0x3f)];
  if (codePoint < 0x110000)
    return [
      0xf0 | (codePoint >> 18),
      0x80 | ((codePoint >> 12) & 0x3f),
      0x80 | ((codePoint >> 6) & 0x3f),
      0x80 | (codePoint & 0x3f),
    ];
  return undefined;
}

function percent(buffer: Uint8Array, at: number, final: boolean): EscapeRead {
  const next = buffer[at + 1];
  if (next === undefined) return final ? NONE : MORE;
  if (next === 0x75 || next === 0x55) return result(hexDigits(buffer, at + 2, 4, final), 6, utf8);
  return result(hexDigits(buffer, at + 1, 2, final), 3, oneByte);
}

function backslash(buffer: Uint8Array, at: number, final: boolean): EscapeRead {
  const next = buffer[at + 1];
  if (next === undefined) return final ? NONE : MORE;
  const c = String.fromCharCode(next);
  if (c === "u") {
    if (buffer[at + 2] === 0x7b) return braced(buffer, at, final);
    const unit = hexDigits(buffer, at + 2, 4, final);
    if (typeof unit === "number" && unit >= 0xd800 && unit <= 0xdbff)
      return surrogatePair(buffer, at, unit, final);
    return result(unit, 6, utf8);
  }
  if (c === "U") return result(hexDigits(buffer, at + 2, 8, final), 10, utf8);
  if (c === "x") return result(hexDigits(buffer, at + 2, 2, final), 4, oneByte);
  if (c >= "0" && c <= "3") {
    let value = 0;
    for (let i = 1; i <= 3; i += 1) {
      const d = buffer[at + i];
      if (d === undefined) return final ? NONE : MORE;
      if (d < 0x30 || d > 0x37) return NONE;
      value = value * 8 + (d - 0x30);
    }
    return { kind: "bytes", bytes: [value], length: 4 };
  }
  const short = SHORT[c];
  return short === undefined ? NONE : { kind: "bytes", bytes: [short], length: 2 };
}

/** `\u{1F600}`: one to six hex digits in braces. */
function braced(buffer: Uint8Array, at: number, final: boolean): EscapeRead {
  let value = 0;
  for (let i = at + 3; i < at + 10; i += 1) {
    const b = buffer[i];
    if (b === undefined) return final ? NONE : MORE;
    if (b === 0x7d) return i === at + 3 ? NONE : result(value, i + 1 - at, utf8);
    const digit = hexValue(b);
    if (digit < 0) return NONE;
    value = value * 16 + digit;
  }
  return NONE;
}

/** `\uD83D\uDE00`: a high surrogate is read with the low one that follows it. */
function surrogatePair(buffer: Uint8Array, at: number, high: number, final: boolean): EscapeRead {
  for (const [offset, expected] of [
    [6, 0x5c],
    [7, 0x75],
  ] as const) {
    const b = buffer[at + offset];
    if (b === undefined) return final ? NONE : MORE;
    if (b !== expected) return NONE;
  }
  const low = hexDigits(buffer, at + 8, 4, final);
  if (low === "more") return MORE;
  if (low === undefined || low < 0xdc00 || low > 0xdfff) return NONE;
  return result(0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00), 12, utf8);
}

function reference(buffer: Uint8Array, at: number, final: boolean): EscapeRead {
  const next = buffer[at + 1];
  if (next === undefined) return final ? NONE : MORE;
  if (next === 0x23) return numericReference(buffer, at, final);
  // A named one: letters, then ';' (or, for the few HTML reads bare, anything else).
  let name = "";
  for (let i = at + 1; i <= at + 1 + LONGEST_NAME; i += 1) {
    const b = buffer[i];
    if (b === undefined) return final ? named(name, i - at, false) : MORE;
    const isLetter = (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a);
    if (!isLetter) return b === 0x3b ? named(name, i + 1 - at, true) : named(name, i - at, false);
    name += String.fromCharCode(b);
  }
  return NONE;
}

function named(name: string, length: number, terminated: boolean): EscapeRead {
  const value = NAMED[name];
  if (value === undefined || (!terminated && !WITHOUT_SEMICOLON.has(name))) return NONE;
  return { kind: "bytes", bytes: [value], length };
}

/** `&#65;` or `&#x41;`: up to eight digits; HTML also reads it without the semicolon. */
function numericReference(buffer: Uint8Array, at: number, final: boolean): EscapeRead {
  let i = at + 2;
  const marker = buffer[i];
  if (marker === undefined) return final ? NONE : MORE;
  const hex = marker === 0x78 || marker === 0x58;
  if (hex) i += 1;
  let value = 0;
  let digits = 0;
  for (; digits <= 8; i += 1, digits += 1) {
    const b = buffer[i];
    if (b === undefined) {
      if (!final) return MORE;
      break;
    }
    const digit = hex ? hexValue(b) : b >= 0x30 && b <= 0x39 ? b - 0x30 : -1;
    if (digit < 0) break;
    value = value * (hex ? 16 : 10) + digit;
  }
  if (digits === 0 || digits > 8) return NONE;
  const length = i - at + (buffer[i] === 0x3b ? 1 : 0);
  return result(value, length, utf8);
}

function quotedPrintable(buffer: Uint8Array, at: number, final: boolean): EscapeRead {
  const next = buffer[at + 1];
  if (next === undefined) return final ? NONE : MORE;
  if (next === 0x0a) return { kind: "skip", length: 2 };
  if (next === 0x0d) {
    const after = buffer[at + 2];
    if (after === undefined) return final ? NONE : MORE;
    return after === 0x0a ? { kind: "skip", length: 3 } : NONE;
  }
  return result(hexDigits(buffer, at + 1, 2, final), 3, oneByte);
}
