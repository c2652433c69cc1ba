/**
 * The string values of a TOML document by their key path: as much TOML as cargo's configuration of
 * sources and registries uses (tables, dotted and quoted keys, basic and literal strings, inline
 * tables). Other values (numbers, booleans, arrays, multi-line strings) are stepped over, never
 * guessed at. Throws an Error naming the line where the text is not TOML this reader follows.
 */

/** A key path joined for a map key (no TOML key holds a NUL). */
export const keyOf = (path: readonly string[]): string => path.join("\0");

export function tomlStrings(text: string): Map<string, string> {
  const values = new Map<string, string>();
  let i = 0;

  const fail = (what: string): never => {
    const line = text.slice(0, i).split("\n").length;
    throw new Error(`line ${line}: ${what}`);
  };
  const blank = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t")) i++;
  };
  /** Spaces, newlines and comments. */
  const gap = () => {
    for (;;) {
      blank();
      if (text[i] === "#") while (i < text.length && text[i] !== "\n") i++;
      if (text[i] === "\n" || text[i] === "\r") i++;
      else return;
    }
  };

  const basicString = (): string => {
    i++;
    let out = "";
    while (i < text.length && text[i] !== '"') {
      const c = text[i] as string;
      if (c === "\n") fail("a string that does not end on its line");
      if (c !== "\\") {
        out += c;
        i++;
        continue;
      }
      const e = text[i + 1];
      const simple: Record<string, string> = {
        '"': '"',
        "\\": "\\",
        n: "\n",
        t: "\t",
        r: "\r",
        b: "\b",
        f: "\f",
      };
      if (e !== undefined && simple[e] !== undefined) {
        out += simple[e];
        i += 2;
      } else if (e === "u" || e === "U") {
        const digits = text.slice(i + 2, i + (e === "u" ? 6 : 10));
        if (!/^[0-9a-fA-F]+$/.test(digits)) fail("a bad \\u escape");
        out += String.fromCodePoint(Number.parseInt(digits, 16));
        i += 2 + digits.length;
      } else fail("a bad escape");
    }
    if (text[i] !== '"') fail("a string that does not end");
    i++;
    return out;
  };
  const literalString = (): string => {
    const end = text.indexOf("'", i + 1);
    if (end < 0 || text.slice(i + 1, end).includes("\n")) fail("a string that does not end on its line");
    const out = text.slice(i + 1, end);
    i = end + 1;
    return out;
  };

  const keyPart = (): string => {
    blank();
    if (text.startsWith('"""', i) || text.startsWith("'''", i)) fail("a multi-line key");
    if (text[i] === '"') return basicString();
    if (text[i] === "'") return literalString();
    const start = i;
    while (i < text.length && /[A-Za-z0-9_-]/.test(text[i] as string)) i++;
    if (i === start) fail("a key expected");
    return text.slice(start, i);
  };
  const key = (): string[] => {
    const parts = [keyPart()];
    for (;;) {
      blank();
      if (text[i] !== ".") return parts;
      i++;
      parts.push(keyPart());
    }
  };

  /** Steps over a value that is not a one-line string or inline table: brackets and strings balanced. */
  const skipValue = () => {
    let depth = 0;
    while (i < text.length) {
      const c = text[i] as string;
      if (text.startsWith('"""', i) || text.startsWith("'''", i)) {
        const end = text.indexOf(text.slice(i, i + 3), i + 3);
        if (end < 0) fail("a multi-line string that does not end");
        i = end + 3;
      } else if (c === '"') basicString();
      else if (c === "'") literalString();
      else if (c === "[" || c === "{") {
        depth++;
        i++;
      } else if (c === "]" || c === "}") {
        if (depth === 0) return;
        depth--;
        i++;
      } else if (c === "#" && depth > 0) while (i < text.length && text[i] !== "\n") i++;
      else if ((c === "\n" || c === ",") && depth === 0) return;
      else i++;
    }
  };

  const value = (path: string[]) => {
    blank();
    if (text[i] === '"' && !text.startsWith('"""', i)) values.set(keyOf(path), basicString());
    else if (text[i] === "'" && !text.startsWith("'''", i)) values.set(keyOf(path), literalString());
    else if (text[i] === "{") {
      i++;
      blank();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        const inner = key();
        blank();
        if (text[i] !== "=") fail("'=' expected");
        i++;
        value([...path, ...inner]);
        blank();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] !== "}") fail("'}' expected");
        i++;
        return;
      }
    } else skipValue();
  };

  /** The current table; undefined inside an array of tables, whose entries are not read. */
  let table: string[] | undefined = [];
  for (gap(); i < text.length; gap()) {
    if (text.startsWith("[[", i)) {
      i += 2;
      key();
      if (!text.startsWith("]]", i)) fail("']]' expected");
      i += 2;
      table = undefined;
    } else if (text[i] === "[") {
      i++;
      table = key();
      blank();
      if (text[i] !== "]") fail("']' expected");
      i++;
    } else {
      const path = key();
      blank();
      if (text[i] !== "=") fail("'=' expected");
      i++;
      if (table === undefined) skipValue();
      else value([...table, ...path]);
    }
    blank();
    if (text[i] === "#") while (i < text.length && text[i] !== "\n") i++;
    if (i < text.length && text[i] !== "\n" && text[i] !== "\r") fail("the line goes on after its value");
  }
  return values;
}
