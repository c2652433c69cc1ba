/**
 * `--devcontainer [path]`: commander gives an optional value the next word, so `harness run -w DIR
 * --devcontainer "fix the tests"` took the task for the file (ENOENT). The value is taken only
 * attached (`--devcontainer=PATH`), as GNU getopt does.
 */
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addSettings, attachOptionalValues } from "../../../src/settings/commander-options.js";

/** `run` and `exec` as cli.ts declares their operands, with the one option that matters here. */
function parse(argv: string[]): { command: string; operands: string[]; devcontainer: unknown } {
  const seen: { command: string; operands: string[]; devcontainer: unknown }[] = [];
  const program = new Command("harness").exitOverride();
  for (const [name, operand] of [
    ["run", "[task...]"],
    ["exec", "<command...>"],
  ] as const) {
    addSettings(program.command(name).argument(operand), ["workspace", "devcontainer"]).action(
      (operands: string[], flags: { devcontainer?: unknown }) => {
        seen.push({ command: name, operands, devcontainer: flags.devcontainer });
      },
    );
  }
  program.parse(attachOptionalValues(["node", "harness", ...argv]));
  const [only] = seen;
  if (only === undefined) throw new Error("no command ran");
  return only;
}

describe("--devcontainer's optional path", () => {
  it("never takes the word after a bare flag: that is the task or the command", () => {
    expect(parse(["run", "-w", "./proj", "--devcontainer", "fix the tests"])).toEqual({
      command: "run",
      operands: ["fix the tests"],
      devcontainer: true,
    });
    expect(parse(["exec", "--devcontainer", "id"]).operands).toEqual(["id"]);
    expect(parse(["exec", "--devcontainer", "--", "id"])).toMatchObject({
      operands: ["id"],
      devcontainer: true,
    });
    expect(parse(["run", "task", "--devcontainer"])).toMatchObject({
      operands: ["task"],
      devcontainer: true,
    });
  });

  it("takes a path given attached, and leaves words after -- alone", () => {
    expect(parse(["run", "--devcontainer=.devcontainer/other.json", "task"])).toEqual({
      command: "run",
      operands: ["task"],
      devcontainer: ".devcontainer/other.json",
    });
    expect(parse(["exec", "--", "echo", "--devcontainer"]).operands).toEqual(["echo", "--devcontainer"]);
    expect(parse(["run"])).toMatchObject({ devcontainer: undefined });
  });

  it("refuses a file given as the next word, in one line naming it and the fix", () => {
    // A task that names a file is a task.
    expect(parse(["run", "--devcontainer", "update package.json"]).operands).toEqual(["update package.json"]);
    expect(() => parse(["exec", "--devcontainer", ".devcontainer/x.json", "--", "id"])).toThrow(
      "--devcontainer takes its file attached: --devcontainer=.devcontainer/x.json (a word after a bare --devcontainer is the task's or the command's)",
    );
  });
});
