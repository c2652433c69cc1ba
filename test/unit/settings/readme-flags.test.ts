/**
 * The README's flag tables are written for people (flags grouped in a row, defaults side by side),
 * so they are not generated; this keeps them true to the settings table instead: every flag a row
 * names exists, and the default each row shows is the one the table declares.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { defaultText, flagName } from "../../../src/settings/setting.js";
import { SETTING_LIST } from "../../../src/settings/settings.js";

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const readme = readFileSync(root("README.md"), "utf8");
/** A command's own options (--continue, --fork) are declared where the command is, in cli.ts. */
const cli = readFileSync(root("src/cli.ts"), "utf8");

/** The rows of every table headed `| flag | default | what |`: the flags named and the default cell. */
function flagRows(): { flags: string[]; defaults: string; line: string }[] {
  const lines = readme.split("\n");
  const rows: { flags: string[]; defaults: string; line: string }[] = [];
  lines.forEach((line, index) => {
    if (line.trim() !== "| flag | default | what |") return;
    for (const row of lines.slice(index + 2)) {
      if (!row.startsWith("|")) break;
      const [, named = "", defaults = ""] = row.split(/(?<!\\)\|/).map((cell) => cell.trim());
      rows.push({ flags: named.match(/--[a-z][a-z-]*/g) ?? [], defaults, line: row });
    }
  });
  return rows;
}

/** "100,000" and `100000` read alike; backticks are typography. */
const plain = (text: string) => text.replaceAll("`", "").replace(/(\d),(\d{3})/g, "$1$2");

/** A setting's long flag, and its `--no-` twin where it has one. */
const byFlag = new Map(
  SETTING_LIST.flatMap((s) => {
    const long = flagName(s);
    const twin = long.startsWith("--no-")
      ? []
      : s.negation === undefined
        ? []
        : [[`--no-${long.slice(2)}`, s]];
    return [[long, s], ...twin] as [string, (typeof SETTING_LIST)[number]][];
  }),
);

describe("the README's flag tables", () => {
  const rows = flagRows();

  it("are found, and name only flags the settings table or a command in cli.ts declares", () => {
    expect(rows.length).toBeGreaterThan(20);
    const declaredInCli = (flag: string) => new RegExp(`"(-\\w, )?${flag}[ "]`).test(cli);
    const unknown = rows.flatMap((r) => r.flags.filter((f) => !byFlag.has(f) && !declaredInCli(f)));
    expect(unknown).toEqual([]);
  });

  it("show each flag's default as the settings table declares it", () => {
    const wrong = rows.flatMap((r) =>
      r.flags.flatMap((flag) => {
        const setting = byFlag.get(flag);
        const shown = setting === undefined || flag.startsWith("--no-") ? undefined : defaultText(setting);
        return shown === undefined || plain(r.defaults).includes(plain(shown))
          ? []
          : [`${flag}: ${shown} not in "${r.defaults}"`];
      }),
    );
    expect(wrong).toEqual([]);
  });
});
