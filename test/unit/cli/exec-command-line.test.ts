import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { commandLine } from "../../../src/cli/exec/exec-command.js";

/** What bash makes of the line: its argv, one per line. */
function argvOf(line: string): string[] {
  return execFileSync("bash", ["-c", `printf '%s\\n' ${line}`], { encoding: "utf8" })
    .split("\n")
    .slice(0, -1);
}

describe("harness exec command line", () => {
  it("takes a single argument as a shell command line, as is", () => {
    expect(commandLine(["make && make test"])).toBe("make && make test");
  });

  it("quotes several arguments so each stays whole, whatever it holds", () => {
    const args = ["-c", "print('a b')", "x y", "it's", "$HOME", 'a"b', "`id`", "plain-arg_1.txt", ""];
    expect(argvOf(commandLine(["printf-target", ...args]).replace(/^printf-target /, ""))).toEqual(args);
    expect(commandLine(["ls", "-la", "src/"])).toBe("ls -la src/");
  });
});
