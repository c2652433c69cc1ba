/**
 * A devcontainer Dockerfile split into instructions the way the engine's parser splits it
 * (moby/buildkit frontend/dockerfile/parser: parser.go, split_command.go), strictly: whatever could
 * make the engine read the file differently from this reader is refused, not guessed at. Only what
 * dockerfile-fetches.ts needs comes out: each instruction's keyword, flags and the text after them.
 *
 * Refused: a file that is not UTF-8; a parser directive other than `# escape=\` (`# syntax=`
 * makes BuildKit pull a frontend image; another escape character changes where lines join);
 * whitespace the engine's Go code and JavaScript disagree about; a flag with quotes, escapes or
 * anything but ASCII (the engine's flag scanner unquotes them and splits on bytes, not characters).
 */

/** One instruction: a logical line, its continuations joined. */
export interface DockerfileInstruction {
  /** 1-based line it starts on. */
  line: number;
  /** Lower case, as the engine matches it (`aDd` is `add`). */
  keyword: string;
  /** `--name=value` flags before the arguments; `value` is undefined for a bare `--name`. */
  flags: { name: string; value: string | undefined }[];
  /** The arguments after the flags, trimmed. */
  rest: string;
}

/** Why a Dockerfile is refused, at which line (0: the file as a whole). */
export class DockerfileRefusal extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/**
 * Go's unicode.IsSpace beyond ASCII. The engine trims and splits on these where JavaScript's trim
 * does not (U+0085) or does where Go does not (U+FEFF): a file holding any is refused, so the two
 * readers never disagree about where a keyword or an argument ends.
 */
const UNUSUAL_SPACE = /[\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/;
/** Go's unicode.IsSpace within ASCII. */
const SPACE = /[\t\n\v\f\r ]/;
/** parser.go's reWhitespace: what separates the keyword and whitespace-delimited arguments. */
export const WORD_SEPARATOR = /[\t\v\f\r ]+/;
/** parser.go's reDirectives. */
const DIRECTIVE = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$/;
/** The escape character (always `\`: another one is refused) at the end of a line. */
const CONTINUATION = /\\[ \t]*$/;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function trimStart(text: string): string {
  let i = 0;
  while (i < text.length && SPACE.test(text[i] as string)) i++;
  return text.slice(i);
}

function trim(text: string): string {
  let end = text.length;
  while (end > 0 && SPACE.test(text[end - 1] as string)) end--;
  return trimStart(text.slice(0, end));
}

/** The file's instructions, in order. Throws DockerfileRefusal. */
export function parseDockerfile(bytes: Uint8Array): DockerfileInstruction[] {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new DockerfileRefusal(0, "the Dockerfile is not valid UTF-8");
  }
  if (text.startsWith("\ufeff")) text = text.slice(1);
  // bufio.ScanLines: lines end at \n, and a \r before it is dropped.
  const lines = text.split("\n").map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
  if (lines.at(-1) === "") lines.pop();
  checkDirectives(lines);
  const instructions: DockerfileInstruction[] = [];
  for (let i = 0; i < lines.length; ) {
    const start = i + 1;
    const first = trimStart(lines[i++] as string);
    if (first.startsWith("#")) continue;
    let line = first;
    let joined = !CONTINUATION.test(line);
    line = line.replace(CONTINUATION, "");
    if (joined && line === "") continue;
    while (!joined && i < lines.length) {
      const next = lines[i++] as string;
      // Comment lines and blank lines inside a continued instruction are skipped.
      if (trimStart(next).startsWith("#") || trimStart(next) === "") continue;
      joined = !CONTINUATION.test(next);
      line += next.replace(CONTINUATION, "");
    }
    instructions.push(instructionAt(start, line));
  }
  return instructions;
}

/**
 * Parser directives are the comments at the very top; the engine honours `escape` and `syntax`
 * there and nowhere else. Any comment before the first instruction that reads like one of the
 * two is looked at, wherever it stands: only `# escape=\` (the default) passes.
 */
function checkDirectives(lines: readonly string[]): void {
  for (const [index, raw] of lines.entries()) {
    const line = trimStart(raw);
    if (line === "") continue;
    if (!line.startsWith("#")) return;
    const match = DIRECTIVE.exec(line);
    const name = match?.[1]?.toLowerCase();
    if (name === "syntax") {
      throw new DockerfileRefusal(
        index + 1,
        `'${line}' would have BuildKit pull a frontend image from a registry; harness builds with the engine's classic builder: remove the line`,
      );
    }
    if (name === "escape" && match?.[2] !== "\\") {
      throw new DockerfileRefusal(
        index + 1,
        `'${line}': only the default escape character (\\) is supported`,
      );
    }
  }
}

/** One logical line as an instruction (also a base image's ONBUILD trigger). Throws DockerfileRefusal. */
export function instructionAt(line: number, text: string): DockerfileInstruction {
  if (UNUSUAL_SPACE.test(text)) {
    throw new DockerfileRefusal(line, "the instruction holds a space character other than ASCII whitespace");
  }
  const trimmed = trim(text);
  const split = WORD_SEPARATOR.exec(trimmed);
  const keyword = (split === null ? trimmed : trimmed.slice(0, split.index)).toLowerCase();
  const args = split === null ? "" : trimmed.slice(split.index + split[0].length);
  const { flags, rest } = builderFlags(line, keyword, args);
  return { line, keyword, flags, rest: trim(rest) };
}

/**
 * split_command.go's extractBuilderFlags: words at the start that begin with `--`, up to `--` alone
 * or the first other word. A flag word with a quote or backslash (the engine unquotes it) or a
 * byte outside ASCII (the engine splits at bytes 0x85 and 0xA0, which are inside some UTF-8
 * characters) is refused rather than unquoted here.
 */
function builderFlags(
  line: number,
  keyword: string,
  args: string,
): { flags: DockerfileInstruction["flags"]; rest: string } {
  const flags: DockerfileInstruction["flags"] = [];
  let rest = args;
  for (;;) {
    rest = trimStart(rest);
    if (!rest.startsWith("--")) return { flags, rest };
    const end = rest.search(/[\t\n\v\f\r ]/);
    const word = end === -1 ? rest : rest.slice(0, end);
    rest = end === -1 ? "" : rest.slice(end);
    if (word === "--") return { flags, rest };
    if (/['"\\]/.test(word) || /[^\x21-\x7e]/.test(word)) {
      throw new DockerfileRefusal(
        line,
        `${keyword.toUpperCase()} flag '${word}' holds quotes, a backslash or characters outside ASCII`,
      );
    }
    const equals = word.indexOf("=");
    flags.push(
      equals === -1
        ? { name: word.slice(2), value: undefined }
        : { name: word.slice(2, equals), value: word.slice(equals + 1) },
    );
  }
}
