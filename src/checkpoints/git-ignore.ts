/**
 * git's ignore rules (gitignore(5)), matched in TypeScript rather than by running git: a checkpoint
 * walks a workspace the sandbox writes, and git run there reads the sandbox's config (core.fsmonitor
 * runs a command on every `git status`). Patterns are matched on UTF-8 bytes, as git's wildmatch
 * does (`?` is one byte), by a table over pattern tokens and path bytes: its cost is the pattern's
 * length times the path's, whatever a hostile pattern (`*a*a*a*a*b`) is, never backtracking.
 *
 * What git does and this does: blank lines and `#` comments; `\` quotes the next character (`\#`,
 * `\!`, `\ `); unquoted trailing spaces dropped; `!` re-includes; a trailing `/` matches directories
 * only; a `/` at the start or in the middle anchors the pattern to its file's directory, otherwise it
 * matches a name at any depth below it; `*`, `?` and `[...]` (ranges, `!`/`^`, `[:alpha:]` classes)
 * never match a `/`; `**/ ` leading or in the middle matches any directories, `; /**` at the end
 * everything inside; other `**` are `*`; the last matching pattern wins, deeper files before
 * shallower, then `.git/info/exclude`, then the global excludes. A directory that is ignored is not
 * entered, so nothing below it can be re-included (git's rule too).
 */

/** One parsed line. */
interface Rule {
  negated: boolean;
  directoryOnly: boolean;
  /** Matched against the path below the rules' directory (true) or against the last name (false). */
  anchored: boolean;
  /** A pattern without wildcards: compared as it is. */
  literal?: string;
  /** `*` then a literal without wildcards or `/`: the name ends with it. */
  suffix?: string;
  tokens?: Token[];
  /**
   * With `tokens`: the literal bytes before the first wildcard and after the last, and the longest
   * literal run between, which any match holds: most names fail these before the table is built.
   */
  head?: string;
  tail?: string;
  inner?: string;
}

type Token =
  | { kind: "byte"; byte: number }
  | { kind: "one" }
  | { kind: "class"; negated: boolean; matches: (byte: number) => boolean }
  /** `*`: any bytes but `/`. */
  | { kind: "star" }
  /** `**` followed by `/` (leading or middle): nothing, or anything that ends with `/`. */
  | { kind: "dirs" }
  /** `/**` at the end: anything. */
  | { kind: "any" };

/** The rules of one file, and the directory they apply below ("" for the workspace's root). */
export interface RuleSet {
  base: string;
  rules: Rule[];
}

const SLASH = 0x2f;
const BACKSLASH = 0x5c;
const POSIX_CLASSES: Record<string, (b: number) => boolean> = {
  alnum: (b) => isAlpha(b) || isDigit(b),
  alpha: (b) => isAlpha(b),
  blank: (b) => b === 0x20 || b === 0x09,
  cntrl: (b) => b < 0x20 || b === 0x7f,
  digit: (b) => isDigit(b),
  graph: (b) => b > 0x20 && b < 0x7f,
  lower: (b) => b >= 0x61 && b <= 0x7a,
  print: (b) => b >= 0x20 && b < 0x7f,
  punct: (b) => b > 0x20 && b < 0x7f && !isAlpha(b) && !isDigit(b),
  space: (b) => b === 0x20 || (b >= 0x09 && b <= 0x0d),
  upper: (b) => b >= 0x41 && b <= 0x5a,
  xdigit: (b) => isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66),
};

function isAlpha(b: number): boolean {
  return (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a);
}
function isDigit(b: number): boolean {
  return b >= 0x30 && b <= 0x39;
}

/** The rules of one ignore file's bytes (a UTF-8 BOM at the start is skipped, as git does). */
export function parseIgnoreFile(content: Buffer, base: string): RuleSet {
  let text = content;
  if (text[0] === 0xef && text[1] === 0xbb && text[2] === 0xbf) text = text.subarray(3);
  const rules: Rule[] = [];
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf(0x0a, start);
    if (end < 0) end = text.length;
    const rule = parseLine(text.subarray(start, end));
    if (rule !== undefined) rules.push(rule);
    start = end + 1;
  }
  return { base, rules };
}

/** One line as git reads it, or undefined for a blank line, a comment or a pattern that never matches. */
export function parseLine(line: Buffer): Rule | undefined {
  let end = line.length;
  // Trailing spaces go unless quoted: `a\ ` keeps one.
  while (end > 0 && line[end - 1] === 0x20 && !(end > 1 && line[end - 2] === BACKSLASH)) end -= 1;
  let bytes = line.subarray(0, end);
  if (bytes.length === 0 || bytes[0] === 0x23) return undefined;
  const negated = bytes[0] === 0x21;
  if (negated) bytes = bytes.subarray(1);
  let directoryOnly = false;
  if (bytes.length > 0 && bytes[bytes.length - 1] === SLASH) {
    directoryOnly = true;
    bytes = bytes.subarray(0, bytes.length - 1);
  }
  if (bytes.length === 0) return undefined;
  const anchored = bytes.includes(SLASH);
  if (bytes[0] === SLASH) bytes = bytes.subarray(1);
  const tokens = tokenize(bytes);
  if (tokens === undefined) return undefined;
  const rule: Rule = { negated, directoryOnly, anchored };
  if (tokens.every((t) => t.kind === "byte")) rule.literal = bytesOf(tokens).toString("latin1");
  else if (
    !anchored &&
    tokens[0]?.kind === "star" &&
    tokens.slice(1).every((t) => t.kind === "byte" && t.byte !== SLASH)
  )
    rule.suffix = bytesOf(tokens.slice(1)).toString("latin1");
  else {
    rule.tokens = tokens;
    const runs = literalRuns(tokens);
    rule.head = tokens[0]?.kind === "byte" ? (runs[0] ?? "") : "";
    rule.tail = tokens[tokens.length - 1]?.kind === "byte" ? (runs[runs.length - 1] ?? "") : "";
    rule.inner = runs.reduce((a, b) => (b.length > a.length ? b : a), "");
  }
  return rule;
}

/** The maximal runs of literal bytes between wildcards, as latin1 strings. */
function literalRuns(tokens: readonly Token[]): string[] {
  const runs: string[] = [];
  let run: number[] = [];
  for (const token of tokens) {
    if (token.kind === "byte") run.push(token.byte);
    else {
      if (run.length > 0) runs.push(Buffer.from(run).toString("latin1"));
      run = [];
    }
  }
  if (run.length > 0) runs.push(Buffer.from(run).toString("latin1"));
  return runs;
}

function bytesOf(tokens: Token[]): Buffer {
  return Buffer.from(tokens.map((t) => (t.kind === "byte" ? t.byte : 0)));
}

/** The pattern's tokens; undefined when git's wildmatch would never match it (a `[` left open, a trailing `\`). */
function tokenize(p: Buffer): Token[] | undefined {
  const tokens: Token[] = [];
  for (let i = 0; i < p.length; i++) {
    const b = p[i] as number;
    if (b === BACKSLASH) {
      i += 1;
      if (i >= p.length) return undefined;
      tokens.push({ kind: "byte", byte: p[i] as number });
    } else if (b === 0x3f) tokens.push({ kind: "one" });
    else if (b === 0x2a) {
      let run = 1;
      while (p[i + run] === 0x2a) run += 1;
      const atStart = i === 0 || p[i - 1] === SLASH;
      const next = p[i + run];
      i += run - 1;
      if (run >= 2 && atStart && next === SLASH) {
        tokens.push({ kind: "dirs" });
        i += 1;
      } else if (run >= 2 && atStart && next === undefined) tokens.push({ kind: "any" });
      else tokens.push({ kind: "star" });
    } else if (b === 0x5b) {
      const parsed = parseClass(p, i);
      if (parsed === undefined) return undefined;
      tokens.push(parsed.token);
      i = parsed.end;
    } else tokens.push({ kind: "byte", byte: b });
  }
  return tokens;
}

/** `[...]` starting at `open`: the token and the index of its `]`. */
function parseClass(p: Buffer, open: number): { token: Token; end: number } | undefined {
  let i = open + 1;
  const negated = p[i] === 0x21 || p[i] === 0x5e;
  if (negated) i += 1;
  const tests: ((b: number) => boolean)[] = [];
  let first = true;
  for (; i < p.length; i++) {
    let b = p[i] as number;
    if (b === 0x5d && !first) {
      const token: Token = { kind: "class", negated, matches: (x) => tests.some((t) => t(x)) };
      return { token, end: i };
    }
    first = false;
    if (b === 0x5b && p[i + 1] === 0x3a) {
      const close = p.indexOf(":]", i + 2, "latin1");
      if (close < 0) return undefined;
      const test = POSIX_CLASSES[p.subarray(i + 2, close).toString("latin1")];
      if (test === undefined) return undefined; // git: an unknown class never matches.
      tests.push(test);
      i = close + 1;
      continue;
    }
    if (b === BACKSLASH) {
      i += 1;
      if (i >= p.length) return undefined;
      b = p[i] as number;
    }
    if (p[i + 1] === 0x2d && p[i + 2] !== undefined && p[i + 2] !== 0x5d) {
      let high = p[i + 2] as number;
      i += 2;
      if (high === BACKSLASH) {
        i += 1;
        if (i >= p.length) return undefined;
        high = p[i] as number;
      }
      const low = b;
      tests.push((x) => x >= low && x <= high);
    } else {
      const only = b;
      tests.push((x) => x === only);
    }
  }
  return undefined;
}

/** Whether the tokens match all of `text`: a table of which byte offsets each token can end at. */
function wildmatch(tokens: readonly Token[], text: Buffer): boolean {
  const n = text.length;
  let cur = new Uint8Array(n + 1);
  let next = new Uint8Array(n + 1);
  cur[0] = 1;
  for (const token of tokens) {
    next.fill(0);
    let any = false;
    switch (token.kind) {
      case "byte":
        for (let i = 0; i < n; i++) if (cur[i] === 1 && text[i] === token.byte) next[i + 1] = 1;
        break;
      case "one":
        for (let i = 0; i < n; i++) if (cur[i] === 1 && text[i] !== SLASH) next[i + 1] = 1;
        break;
      case "class":
        for (let i = 0; i < n; i++) {
          const b = text[i] as number;
          if (cur[i] === 1 && b !== SLASH && token.matches(b) !== token.negated) next[i + 1] = 1;
        }
        break;
      case "star":
        for (let i = 0; i <= n; i++) {
          if (cur[i] === 1) any = true;
          if (any) next[i] = 1;
          if (text[i] === SLASH) any = false;
        }
        break;
      case "dirs":
        for (let i = 0; i <= n; i++) {
          if (cur[i] === 1 || (any && text[i - 1] === SLASH)) next[i] = 1;
          if (cur[i] === 1) any = true;
        }
        break;
      case "any":
        for (let i = 0; i <= n; i++) {
          if (cur[i] === 1) any = true;
          if (any) next[i] = 1;
        }
        break;
    }
    [cur, next] = [next, cur];
  }
  return cur[n] === 1;
}

/** `relative` and `name` are UTF-8 bytes as latin1 strings (one character per byte), as the rules are. */
function ruleMatches(rule: Rule, relative: string, name: string): boolean {
  const subject = rule.anchored ? relative : name;
  if (rule.literal !== undefined) return subject === rule.literal;
  if (rule.suffix !== undefined) return subject.endsWith(rule.suffix);
  if (
    !subject.startsWith(rule.head ?? "") ||
    !subject.endsWith(rule.tail ?? "") ||
    !subject.includes(rule.inner ?? "")
  )
    return false;
  return wildmatch(rule.tokens ?? [], Buffer.from(subject, "latin1"));
}

/** A string's UTF-8 bytes, one latin1 character each: compared with the rules' bytes as they are. */
function asBytes(text: string): string {
  // ASCII (nearly every name) is its own UTF-8: no conversion.
  return !NOT_ASCII.test(text) ? text : Buffer.from(text, "utf8").toString("latin1");
}
/** A UTF-16 unit above U+007F (astral characters are two such units). */
const NOT_ASCII = /[\u0080-\uffff]/;

/**
 * Whether `path` (workspace-relative, `/`-separated) is ignored by `sets`, given in rising order of
 * precedence (global excludes, `.git/info/exclude`, then each directory's `.gitignore` from the root
 * down): the last rule that matches decides. Only sets whose base is `path`'s parent or above apply.
 */
export function isIgnored(sets: readonly RuleSet[], path: string, isDirectory: boolean): boolean {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const nameBytes = asBytes(name);
  for (let s = sets.length - 1; s >= 0; s--) {
    const set = sets[s] as RuleSet;
    if (set.base !== "" && !path.startsWith(`${set.base}/`)) continue;
    const relative = asBytes(set.base === "" ? path : path.slice(set.base.length + 1));
    for (let r = set.rules.length - 1; r >= 0; r--) {
      const rule = set.rules[r] as Rule;
      if (rule.directoryOnly && !isDirectory) continue;
      if (ruleMatches(rule, relative, nameBytes)) return !rule.negated;
    }
  }
  return false;
}
