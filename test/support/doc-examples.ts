/**
 * The command examples of README.md and docs/: every line of a shell code block (```sh, ```bash or a
 * bare fence) that runs harness's `exec`, `run`, `replay`, `mcp`, `shell` or `batch`, with its
 * continuation lines joined and its trailing comment cut, and split into words as a shell would.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface DocExample {
  /** `docs/network.md:12`. */
  where: string;
  /** The line as written (continuations joined, comment cut, spaces collapsed). */
  text: string;
  /** harness's arguments: the words after `harness` (or `node …/harness.mjs`). */
  args: string[];
  /** `VAR=value` words before harness, as the shell line sets them. */
  env: string[];
}

const SHELL_FENCES = new Set(["sh", "bash", "shell", "console", ""]);
const SUBCOMMANDS = /^(?:exec|run|replay|mcp|shell|batch)$/;

/** Words of a shell line: single and double quotes, backslash escapes; no expansion. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word = `${word ?? ""}${c}`;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === "\\" && i + 1 < line.length) word = `${word ?? ""}${line[++i]}`;
      else word = `${word ?? ""}${c}`;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[++i];
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? "") + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** Where an unquoted `#` starts a comment, or the line's length. */
function commentStart(line: string): number {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "#" && (i === 0 || /\s/.test(line[i - 1] ?? ""))) return i;
  }
  return line.length;
}

/** The harness command in one shell line, after any `$ ` prompt and `cmd && ` before it. */
function harnessCommand(line: string): { args: string[]; env: string[] } | undefined {
  const words = shellWords(line.replace(/^\$\s+/, ""));
  const commands: string[][] = [[]];
  for (const word of words) {
    if (word === "&&") commands.push([]);
    else commands.at(-1)?.push(word);
  }
  for (const command of commands) {
    const env: string[] = [];
    while (command[0] !== undefined && /^[A-Za-z_][A-Za-z0-9_]*=/.test(command[0]))
      env.push(command.shift() as string);
    const skip =
      command[0] === "harness" ? 1 : command[0] === "node" && /harness\.mjs$/.test(command[1] ?? "") ? 2 : 0;
    if (skip === 0 || !SUBCOMMANDS.test(command[skip] ?? "")) continue;
    return { args: command.slice(skip), env };
  }
  return undefined;
}

export function docExamples(root: string): DocExample[] {
  const files = [
    "README.md",
    ...readdirSync(join(root, "docs"))
      .filter((name) => name.endsWith(".md"))
      .sort()
      .map((name) => `docs/${name}`),
  ];
  const found: DocExample[] = [];
  for (const file of files) {
    const lines = readFileSync(join(root, file), "utf8").split("\n");
    let fence: string | undefined;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] ?? "";
      const open = /^\s*```(\S*)/.exec(line);
      if (open) {
        fence = fence === undefined ? (open[1] ?? "") : undefined;
        continue;
      }
      if (fence === undefined || !SHELL_FENCES.has(fence)) continue;
      const start = i + 1;
      let text = line;
      while (text.trimEnd().endsWith("\\") && i + 1 < lines.length) {
        text = `${text.trimEnd().slice(0, -1)} ${(lines[++i] ?? "").trim()}`;
      }
      text = text.slice(0, commentStart(text)).trim().replace(/\s+/g, " ");
      const command = harnessCommand(text);
      if (command !== undefined) found.push({ where: `${file}:${start}`, text, ...command });
    }
  }
  return found;
}
