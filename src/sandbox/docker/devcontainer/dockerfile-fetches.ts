/**
 * What a devcontainer Dockerfile would have the engine fetch. The build's network mode only covers
 * its RUN steps: the engine itself downloads `ADD <url>`, pulls a `FROM` or `COPY --from` image it
 * does not have, and runs the base image's `ONBUILD` triggers, all in the daemon, on the host's
 * network (a loopback origin on the host got a workspace secret that way). So before any build,
 * every instruction is checked here and a Dockerfile that names anything fetched is refused; the
 * images it needs come out, for base-images.ts to find on the engine (and to read their triggers).
 *
 * An allowlist, not a list of bad spellings: only the instructions and flags below pass, ADD's
 * sources must be plain paths, and a FROM's `$VAR` is worked out only from global ARGs with plain
 * values; anything else is refused in one line rather than guessed at.
 */
import {
  type DockerfileInstruction,
  DockerfileRefusal,
  instructionAt,
  parseDockerfile,
  WORD_SEPARATOR,
} from "./dockerfile-syntax.js";

/** An image the build reads from the engine: it must be there (base-images.ts). */
export interface NeededImage {
  /** The reference as the engine gets it, variables worked out. */
  ref: string;
  /** The line that names it. */
  line: number;
  /** "FROM" (its ONBUILD triggers then run in this build) or "COPY --from". */
  use: "FROM" | "COPY --from";
}

/** Flags each instruction may carry; any other is refused (RUN --mount, RUN --network, ADD --checksum…). */
const ALLOWED_FLAGS: Readonly<Record<string, readonly string[]>> = {
  add: ["chown", "chmod"],
  arg: [],
  cmd: [],
  copy: ["chown", "chmod", "from"],
  entrypoint: [],
  env: [],
  expose: [],
  from: [],
  healthcheck: ["interval", "timeout", "start-period", "start-interval", "retries"],
  label: [],
  maintainer: [],
  onbuild: [],
  run: [],
  shell: [],
  stopsignal: [],
  user: [],
  volume: [],
  workdir: [],
};

/** What BuildKit or Buildah would fetch as an ADD source: any URL scheme, git's scp-like form, GitHub shorthand. */
const REMOTE_SOURCE = /^[a-z][a-z0-9+.-]*:\/\/|^git@|^github\.com\//i;

/** A heredoc (`<<EOF`, `<<-"EOF"`): BuildKit reads the lines after it as data, the classic builder does not. */
const HEREDOC = /(^|[\s;&|(])[0-9]*<<-?[ \t]*["']?[A-Za-z0-9_]/;

/** A variable reference, quote or escape: the engine's shell lexer would change the word. */
const LEXED = /[$"'\\]/;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The stages seen so far and the global ARGs, while walking one Dockerfile. */
interface Walk {
  /** Lower-cased stage names, in order (an unnamed stage is ""). */
  stages: string[];
  /** Global ARGs (before the first FROM): plain value, null without one, undefined when not plain. */
  globals: Map<string, string | null | undefined>;
  buildArgs: Readonly<Record<string, string>>;
  needed: NeededImage[];
}

/** The images the Dockerfile needs from the engine. Throws DockerfileRefusal naming the first fetch. */
export function imagesNeeded(bytes: Uint8Array, buildArgs: Readonly<Record<string, string>>): NeededImage[] {
  const walk: Walk = { stages: [], globals: new Map(), buildArgs, needed: [] };
  const instructions = parseDockerfile(bytes);
  if (instructions.length === 0) throw new DockerfileRefusal(0, "the Dockerfile has no instructions");
  for (const instruction of instructions) {
    if (walk.stages.length === 0 && instruction.keyword !== "from") {
      if (instruction.keyword !== "arg") {
        throw new DockerfileRefusal(instruction.line, "only ARG may come before the first FROM");
      }
      checkFlags(instruction);
      for (const [name, value] of argDeclarations(instruction.rest)) walk.globals.set(name, value);
      continue;
    }
    checkInstruction(instruction, walk);
  }
  return walk.needed;
}

/**
 * A base image's ONBUILD trigger (from its config), which the engine runs in this build right after
 * the FROM: checked as if it were written there. Throws DockerfileRefusal.
 */
export function triggerImagesNeeded(trigger: string, line: number, stages: readonly string[]): NeededImage[] {
  const walk: Walk = { stages: [...stages], globals: new Map(), buildArgs: {}, needed: [] };
  const instruction = instructionAt(line, trigger);
  if (["from", "onbuild", "maintainer"].includes(instruction.keyword)) {
    throw new DockerfileRefusal(line, `an ONBUILD trigger cannot be ${instruction.keyword.toUpperCase()}`);
  }
  checkInstruction(instruction, walk);
  return walk.needed;
}

function checkInstruction(instruction: DockerfileInstruction, walk: Walk): void {
  checkFlags(instruction);
  const { keyword, line, rest } = instruction;
  switch (keyword) {
    case "from":
      checkFrom(instruction, walk);
      return;
    case "add":
      if (HEREDOC.test(rest)) throw heredoc(instruction);
      for (const source of sources(instruction)) checkAddSource(source, line);
      return;
    case "copy": {
      if (HEREDOC.test(rest)) throw heredoc(instruction);
      sources(instruction);
      const from = instruction.flags.find((flag) => flag.name === "from");
      if (from !== undefined) checkCopyFrom(from.value ?? "", line, walk);
      return;
    }
    case "run":
      if (!rest.startsWith("[") && HEREDOC.test(rest)) throw heredoc(instruction);
      return;
    case "onbuild": {
      // Fires only in a later build FROM this image; checked now all the same, as it would be then.
      const inner = instructionAt(line, rest);
      if (["from", "onbuild", "maintainer"].includes(inner.keyword)) {
        throw new DockerfileRefusal(line, `ONBUILD cannot trigger ${inner.keyword.toUpperCase()}`);
      }
      checkInstruction(inner, walk);
      return;
    }
    default:
      return;
  }
}

function checkFlags(instruction: DockerfileInstruction): void {
  const allowed = ALLOWED_FLAGS[instruction.keyword];
  const word = instruction.keyword.toUpperCase();
  if (allowed === undefined) {
    throw new DockerfileRefusal(instruction.line, `unknown instruction '${word}'`);
  }
  for (const flag of instruction.flags) {
    if (!allowed.includes(flag.name)) {
      const why =
        instruction.keyword === "run"
          ? "RUN takes no flags here (a --mount or --network reaches outside the build)"
          : allowed.length === 0
            ? `${word} takes no flags here`
            : `${word} takes only ${allowed.map((name) => `--${name}`).join(", ")} here`;
      throw new DockerfileRefusal(instruction.line, `${word} --${flag.name}: ${why}`);
    }
  }
}

function heredoc(instruction: DockerfileInstruction): DockerfileRefusal {
  return new DockerfileRefusal(
    instruction.line,
    `${instruction.keyword.toUpperCase()} with a heredoc (<<): not supported by the classic builder harness uses`,
  );
}

/**
 * ADD's and COPY's sources (every argument but the destination), from the JSON form or the
 * whitespace-separated one. A `[` that does not start a clean JSON array of strings is refused: the
 * engine would read it one way or the other depending on what follows.
 */
function sources(instruction: DockerfileInstruction): string[] {
  const { rest, line } = instruction;
  const word = instruction.keyword.toUpperCase();
  let args: string[];
  if (rest.startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(rest);
    } catch {
      parsed = undefined;
    }
    if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === "string")) {
      throw new DockerfileRefusal(line, `${word} ${rest}: not a JSON array of strings`);
    }
    args = parsed;
  } else args = rest === "" ? [] : rest.split(WORD_SEPARATOR);
  if (args.length < 2) throw new DockerfileRefusal(line, `${word} needs a source and a destination`);
  return args.slice(0, -1);
}

function checkAddSource(source: string, line: number): void {
  if (LEXED.test(source)) {
    throw new DockerfileRefusal(
      line,
      `ADD source '${source}' holds a variable, quotes or a backslash: harness cannot tell whether the engine would download it; name a file in the build context`,
    );
  }
  if (REMOTE_SOURCE.test(source)) {
    throw new DockerfileRefusal(
      line,
      `ADD ${source}: the engine would download it itself, on the host's network, whatever the build's network mode; put the file in the build context and ADD or COPY it from there`,
    );
  }
}

function checkFrom(instruction: DockerfileInstruction, walk: Walk): void {
  const { rest, line } = instruction;
  const words = rest === "" ? [] : rest.split(WORD_SEPARATOR);
  if (!(words.length === 1 || (words.length === 3 && words[1]?.toLowerCase() === "as"))) {
    throw new DockerfileRefusal(line, `FROM ${rest}: expected FROM IMAGE [AS NAME]`);
  }
  const base = expandFromWord(words[0] as string, line, walk);
  const lower = base.toLowerCase();
  walk.stages.push(words[2]?.toLowerCase() ?? "");
  if (base === "scratch" || walk.stages.slice(0, -1).includes(lower)) return;
  walk.needed.push({ ref: checkedReference(base, line), line, use: "FROM" });
}

function checkCopyFrom(from: string, line: number, walk: Walk): void {
  if (from === "" || LEXED.test(from)) {
    throw new DockerfileRefusal(line, `COPY --from=${from}: name a stage or an image, without variables`);
  }
  const lower = from.toLowerCase();
  if (walk.stages.includes(lower)) return;
  if (/^[0-9]+$/.test(from) && Number(from) < walk.stages.length - 1) return;
  walk.needed.push({ ref: checkedReference(from, line), line, use: "COPY --from" });
}

/** A name the engine takes as an image reference (or id); nothing else reaches `inspect`. */
function checkedReference(ref: string, line: number): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/.test(ref) || ref.length > 512) {
    throw new DockerfileRefusal(line, `'${ref}' is not an image reference harness understands`);
  }
  return ref;
}

/**
 * FROM's image word with the global ARGs substituted, as the engine's shell lexer does it, for the
 * forms a Dockerfile uses there: `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME:+alternative}`.
 * An ARG's value is its build.args entry, else its plain default.
 */
function expandFromWord(word: string, line: number, walk: Walk): string {
  const refuse = (why: string) => new DockerfileRefusal(line, `FROM ${word}: ${why}`);
  if (/["'\\]/.test(word) || /[^\x21-\x7e]/.test(word)) throw refuse("quotes, backslashes or non-ASCII");
  const value = (name: string): string => {
    if (!walk.globals.has(name)) return "";
    if (Object.hasOwn(walk.buildArgs, name)) return walk.buildArgs[name] as string;
    const known = walk.globals.get(name);
    if (known === undefined) {
      throw refuse(
        `the default of ARG ${name} is not a plain value harness can work out; write it without quotes or variables`,
      );
    }
    return known ?? "";
  };
  const expanded = word.replace(
    /\$(\{([^}]*)\}|[A-Za-z0-9_]*)/g,
    (whole, _all, braced: string | undefined) => {
      if (braced === undefined) {
        const name = whole.slice(1);
        if (!NAME.test(name)) throw refuse(`'${whole}' is not a variable harness can work out`);
        return value(name);
      }
      const match = /^([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^${}]*))?$/.exec(braced);
      if (match === null) throw refuse(`'${whole}' is not a substitution harness can work out`);
      const [, name = "", operator, alternative = ""] = match;
      const found = value(name);
      if (operator === "-") return found === "" ? alternative : found;
      if (operator === "+") return found === "" ? "" : alternative;
      return found;
    },
  );
  if (expanded === "") throw refuse("names no image once its variables are substituted");
  return expanded;
}

/**
 * `ARG NAME[=value] ...`: each name with its value when it is plain (no variable, no escape, at most
 * one pair of quotes around it), null without a default, undefined otherwise (refused if a FROM
 * uses it). Words are split as the engine splits them (quotes keep spaces in).
 */
function argDeclarations(rest: string): [string, string | null | undefined][] {
  const declared: [string, string | null | undefined][] = [];
  for (const word of quotedWords(rest)) {
    const equals = word.indexOf("=");
    const name = equals === -1 ? word : word.slice(0, equals);
    // A name with quotes in it is no variable a FROM can name.
    if (!NAME.test(name)) continue;
    if (equals === -1) {
      declared.push([name, null]);
      continue;
    }
    const raw = word.slice(equals + 1);
    const quoted = /^(["'])(.*)\1$/s.exec(raw);
    const body = quoted === null ? raw : (quoted[2] as string);
    declared.push([name, LEXED.test(body) ? undefined : body]);
  }
  return declared;
}

/**
 * line_parsers.go's parseWords: words separated by whitespace outside quotes, the quotes and
 * escapes kept in each word (the shell lexer removes them later).
 */
export function quotedWords(rest: string): string[] {
  const words: string[] = [];
  let word = "";
  let quote: string | undefined;
  let started = false;
  const chars = [...rest];
  for (let i = 0; i < chars.length; i++) {
    let char = chars[i] as string;
    if (quote === undefined && /\s/.test(char)) {
      if (started) words.push(word);
      word = "";
      started = false;
      continue;
    }
    started = true;
    if (quote === undefined && (char === "'" || char === '"')) quote = char;
    else if (quote !== undefined && char === quote) quote = undefined;
    if (char === "\\" && quote !== "'") {
      if (i + 1 === chars.length) {
        if (quote !== undefined) quote = undefined;
        continue;
      }
      word += char;
      char = chars[++i] as string;
    }
    word += char;
  }
  if (started) words.push(word);
  return words;
}
