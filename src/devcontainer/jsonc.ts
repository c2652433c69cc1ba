/**
 * A small reader for JSONC, the JSON with comments that devcontainer.json is written in: `//` and
 * `/* *\/` comments and trailing commas before `}` or `]` are dropped outside strings, then
 * `JSON.parse` reads the rest, so everything else is as strict as JSON.
 */

/** Why the text is not JSONC; `offset` is where (0-based, in UTF-16 units). */
export class JsoncError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = "JsoncError";
  }
}

/** The value `text` holds; throws JsoncError for an unclosed comment or string, or invalid JSON. */
export function parseJsonc(text: string): unknown {
  const plain = stripComments(text.startsWith("\uFEFF") ? text.slice(1) : text);
  try {
    return JSON.parse(dropTrailingCommas(plain));
  } catch (error) {
    const offset = Number(/position (\d+)/.exec((error as Error).message)?.[1] ?? -1);
    throw new JsoncError(`not valid JSON: ${(error as Error).message}`, offset);
  }
}

/**
 * Comments become spaces (a newline stays a newline), so offsets in JSON.parse's errors still
 * point into the original text.
 */
function stripComments(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") {
        out += " ";
        i++;
      }
    } else if (c === "/" && text[i + 1] === "*") {
      const close = text.indexOf("*/", i + 2);
      if (close === -1) throw new JsoncError("a /* comment is never closed", i);
      for (const ch of text.slice(i, close + 2)) out += ch === "\n" ? "\n" : " ";
      i = close + 2;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The offset just past the string that opens at `start` (its quote included). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\") i += 2;
    else if (c === '"') return i + 1;
    else if (c === "\n") break;
    else i++;
  }
  throw new JsoncError("a string is never closed", start);
}

/** A comma followed (past whitespace) by `}` or `]`, outside strings, becomes a space. */
function dropTrailingCommas(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
      continue;
    }
    if (c === ",") {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j] ?? "")) j++;
      if (text[j] === "}" || text[j] === "]") {
        out += " ";
        i++;
        continue;
      }
    }
    out += c;
    i++;
  }
  return out;
}
