/**
 * Finds every form (`value-forms.ts`) of some byte strings in a buffer, each symbol read either as
 * its own byte or through one escape (`escapes.ts`), and says how far the buffer is decided: bytes
 * after `safeEnd` might begin a form that the next bytes complete, so a stream holds them back.
 * What is held back is bounded: between two symbols of a form come at most MAX_SKIPPED separators
 * (or quoted-printable soft breaks), and each is one escape long at most.
 */
import { ESCAPE_START as ESCAPE_START_TABLE, readEscape as readEscapeAt } from "./escapes.js";
import type { ValueForm } from "./value-forms.js";

// Module-local references: the loop below reads these per byte, and an imported binding may be a getter.
const ESCAPE_START = ESCAPE_START_TABLE;
const readEscape = readEscapeAt;

export interface FormMatch<Tag> {
  /** Byte offsets in the buffer scanned: the match is `[start, end)`. */
  start: number;
  end: number;
  form: ValueForm<Tag>;
  /** The symbols matched, unescaped, one per position of the form. */
  symbols: number[];
}

export interface ScanResult<Tag> {
  /**
   * Matches in order, all ending at or before `safeEnd`. Two base64 matches overlap when one string
   * follows the other inside one base64 text so closely that a character carries bits of both: the
   * second then starts at the first's last character (`start` < the previous `end`).
   */
  matches: FormMatch<Tag>[];
  /** Every byte before this is decided; the rest may be part of a form not yet complete. */
  safeEnd: number;
}

/** Separators passed over in a row inside one form (`\r\n` and some indentation). */
const MAX_SKIPPED = 8;

type Attempt = { end: number; last: number } | "fail" | "more";

export class FormScanner<Tag> {
  readonly #forms: readonly ValueForm<Tag>[];
  /** For each byte: the forms whose first symbol it can be. */
  readonly #first: ReadonlyArray<readonly ValueForm<Tag>[]>;
  /** Bytes that start a form or an escape: the only positions tried. */
  readonly #interesting: Uint8Array;
  /**
   * Byte pairs (`first << 8 | second`) that may begin some form: the first byte starts a form or an
   * escape, the second may follow it. Nearly every position fails this one lookup.
   */
  readonly #pairs: Uint8Array;

  constructor(forms: readonly ValueForm<Tag>[]) {
    this.#forms = forms;
    const first: ValueForm<Tag>[][] = Array.from({ length: 256 }, () => []);
    const interesting = new Uint8Array(256);
    for (const form of forms) {
      const set = form.sets[0];
      if (set === undefined) continue;
      for (let b = 0; b < 256; b += 1) {
        if (set[b]) {
          first[b]?.push(form);
          interesting[b] = 1;
        }
      }
    }
    for (let b = 0; b < 256; b += 1) if (ESCAPE_START[b]) interesting[b] = 1;

    this.#first = first;
    this.#interesting = interesting;
    const pairs = new Uint8Array(65536);
    for (let b0 = 0; b0 < 256; b0 += 1) {
      if (ESCAPE_START[b0]) {
        pairs.fill(1, b0 << 8, (b0 + 1) << 8);
        continue;
      }
      for (const form of first[b0] ?? []) {
        for (let b1 = 0; b1 < 256; b1 += 1) if (form.follows[b1]) pairs[(b0 << 8) | b1] = 1;
      }
    }
    this.#pairs = pairs;
  }

  get empty(): boolean {
    return this.#forms.length === 0;
  }

  /** The matches in `buffer`; `final` says nothing follows it (a partial form is then no form). */
  scan(buffer: Uint8Array, final: boolean): ScanResult<Tag> {
    const matches: FormMatch<Tag>[] = [];
    const interesting = this.#interesting;
    const pairs = this.#pairs;
    const first = this.#first;
    const length = buffer.length;
    const lastPair = length - 1;
    let at = 0;
    outer: while (at < length) {
      // The tight part: skip every position no form can begin at.
      while (at < lastPair && pairs[((buffer[at] as number) << 8) | (buffer[at + 1] as number)] === 0)
        at += 1;
      if (at >= length) break;
      const byte = buffer[at] as number;
      if (at === lastPair && interesting[byte] === 0) break;
      const candidates = ESCAPE_START[byte]
        ? this.#candidates(buffer, at, final)
        : (first[byte] as ValueForm<Tag>[]);
      const next = at + 1 < length && !ESCAPE_START[byte] ? (buffer[at + 1] as number) : -1;
      let held = false;
      for (let c = 0; c < candidates.length; c += 1) {
        const form = candidates[c] as ValueForm<Tag>;
        // Most tries fail on the second symbol: tell that without the full matcher.
        if (next >= 0 && form.follows[next] === 0) continue;
        const symbols: number[] = [];
        const attempt = this.#match(buffer, at, 0, form, symbols, final);
        if (attempt === "more") held = true;
        else if (attempt !== "fail") {
          matches.push({ start: at, end: attempt.end, form, symbols });
          // A base64 form's last character may also carry the first bits of what follows: look
          // there again, so a second string right behind is not hidden by the first.
          at = form.kind === "base64" && sharesLastCharacter(form) ? attempt.last : attempt.end;
          continue outer;
        }
      }
      if (held) {
        // Undecided from here: so is any match that reaches past it (it is found again whole).
        let safeEnd = at;
        while ((matches.at(-1)?.end ?? 0) > safeEnd) safeEnd = matches.pop()?.start ?? safeEnd;
        return { matches, safeEnd };
      }
      at += 1;
    }
    return { matches, safeEnd: length };
  }

  /** The forms that could start at `at`: by its byte, and by what an escape there stands for. */
  #candidates(buffer: Uint8Array, at: number, final: boolean): readonly ValueForm<Tag>[] {
    const byte = buffer[at] ?? 0;
    const direct = this.#first[byte] ?? [];
    if (!ESCAPE_START[byte]) return direct;
    const read = readEscape(buffer, at, final);
    // An escape not yet readable might stand for any first symbol.
    if (read.kind === "more") return this.#forms;
    if (read.kind !== "bytes") return direct;
    const decoded = this.#first[read.bytes[0] ?? 0] ?? [];
    return direct.length === 0 ? decoded : [...new Set([...direct, ...decoded])];
  }

  /** Matches `form` from symbol `j` at byte `at`; `symbols` gets what each position matched. */
  #match(
    buffer: Uint8Array,
    at: number,
    j: number,
    form: ValueForm<Tag>,
    symbols: number[],
    final: boolean,
  ): Attempt {
    const { sets, skip } = form;
    let pos = at;
    let index = j;
    let skipped = 0;
    let last = at;
    while (index < sets.length) {
      const byte = buffer[pos];
      if (byte === undefined) return final ? "fail" : "more";
      const set = sets[index] as Uint8Array;
      if (ESCAPE_START[byte]) {
        const read = readEscape(buffer, pos, final);
        if (read.kind === "more") return "more";
        if (read.kind === "skip") {
          if (skipped >= MAX_SKIPPED) return "fail";
          skipped += 1;
          pos += read.length;
          continue;
        }
        if (read.kind === "bytes") {
          const { bytes } = read;
          if (this.#fits(bytes, sets, index)) {
            if (set[byte]) {
              // The escape and its own first byte both fit: try the escape, then the byte itself.
              const tried = this.#match(
                buffer,
                pos + read.length,
                index + bytes.length,
                form,
                symbols,
                final,
              );
              if (tried !== "fail") {
                if (tried !== "more" && index + bytes.length === sets.length) tried.last = pos;
                bytes.forEach((b, i) => {
                  symbols[index + i] = b;
                });
                return tried;
              }
            } else {
              bytes.forEach((b, i) => {
                symbols[index + i] = b;
              });
              last = pos;
              index += bytes.length;
              pos += read.length;
              skipped = 0;
              continue;
            }
          } else if (
            skip !== undefined &&
            index > 0 &&
            bytes.every((b) => skip[b]) &&
            skipped < MAX_SKIPPED
          ) {
            skipped += 1;
            pos += read.length;
            continue;
          }
        }
      }
      if (set[byte]) {
        symbols[index] = byte;
        last = pos;
        index += 1;
        pos += 1;
        skipped = 0;
        continue;
      }
      if (skip !== undefined && index > 0 && skip[byte] && skipped < MAX_SKIPPED) {
        skipped += 1;
        pos += 1;
        continue;
      }
      return "fail";
    }
    symbols.length = sets.length;
    return { end: pos, last };
  }

  #fits(bytes: readonly number[], sets: readonly Uint8Array[], index: number): boolean {
    if (index + bytes.length > sets.length) return false;
    for (let i = 0; i < bytes.length; i += 1) if (!sets[index + i]?.[bytes[i] ?? 0]) return false;
    return true;
  }
}

/** True when the string's last bits end inside a base64 character (some of it belongs to what follows). */
function sharesLastCharacter(form: ValueForm<unknown>): boolean {
  return (8 * form.lead + 8 * form.bytes.length) % 6 !== 0;
}
