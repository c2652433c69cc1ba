/**
 * The lines of a `.env` that dotenv's parser skips without a word (`ANTHROPIC_API_KEY sk-…` with no
 * `=`, a stray word): each is one line on stderr, so that "ANTHROPIC_API_KEY is not set" afterwards
 * is not a mystery. Found with dotenv's own line pattern (dotenv 17, lib/main.js `LINE`): a line
 * that is neither blank, nor a comment, nor inside a match (a quoted value may span lines) was
 * skipped. Values are never shown (they are often secrets): the line number, and its first word
 * when that looks like a variable name.
 */

/** dotenv's `LINE`, as its parser applies it to the whole text. */
const LINE =
  /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/gm;

export interface MalformedLine {
  /** 1-based. */
  line: number;
  /** Its first word when that reads as a variable's name (`ANTHROPIC_API_KEY`), else undefined. */
  name: string | undefined;
}

export function malformedDotenvLines(content: string | Buffer): MalformedLine[] {
  const text = content.toString().replace(/\r\n?/g, "\n");
  const covered: [number, number][] = [];
  for (const match of text.matchAll(LINE)) covered.push([match.index, match.index + match[0].length]);
  const found: MalformedLine[] = [];
  let start = 0;
  text.split("\n").forEach((line, index) => {
    const at = start;
    start += line.length + 1;
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    // A line whose first character a match consumed was read (as a pair, or as part of a quoted value).
    const first = at + (line.length - line.trimStart().length);
    if (covered.some(([from, to]) => first >= from && first < to)) return;
    // Only a word in capitals reads as a variable's name ("junk line here" names none).
    const word = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)(?![\w.-])/.exec(trimmed)?.[1];
    found.push({ line: index + 1, name: word });
  });
  return found;
}

/** Most lines named one by one; the rest are counted. */
const SHOWN = 3;

/** The lines said about `path`'s skipped lines. */
export function malformedDotenvNotes(path: string, malformed: readonly MalformedLine[]): string[] {
  const notes = malformed.slice(0, SHOWN).map(({ line, name }) => {
    const which = name === undefined ? "" : ` (it starts with ${name})`;
    const fix = name === undefined ? "KEY=value" : `${name}=value`;
    return `${path} line ${line} is not KEY=value${which}, so dotenv skipped it: write it as ${fix}, or start it with # to keep it as a comment`;
  });
  const more = malformed.length - SHOWN;
  if (more > 0) notes.push(`${path}: ${more} more line${more === 1 ? "" : "s"} skipped the same way`);
  return notes;
}
