import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isIgnored, parseIgnoreFile, type RuleSet } from "../../../src/checkpoints/git-ignore.js";
import { excludesFileIn, globalExcludes } from "../../../src/checkpoints/ignore-sources.js";

/** [.gitignore at the root, path (a trailing `/`: a directory), ignored?], from gitignore(5)'s own examples. */
const CASES: [string, string, boolean][] = [
  ["foo", "foo", true],
  ["foo", "a/b/foo", true],
  ["foo", "foobar", false],
  ["foo/", "a/foo/", true],
  ["foo/", "a/foo", false],
  ["/foo", "foo", true],
  ["/foo", "a/foo", false],
  ["doc/frotz/", "doc/frotz/", true],
  ["doc/frotz/", "a/doc/frotz/", false],
  ["doc/frotz", "doc/frotz/", true],
  ["*.txt", "a/b.txt", true],
  ["*.txt", "a.txt/", true],
  ["*.txt", "a.txt.bak", false],
  ["a/*.txt", "a/b.txt", true],
  ["a/*.txt", "a/x/b.txt", false],
  ["a/*.txt", "x/a/b.txt", false],
  ["**/foo", "foo", true],
  ["**/foo", "x/y/foo", true],
  ["**/foo/bar", "x/foo/bar", true],
  ["**/foo/bar", "foo/bar", true],
  ["abc/**", "abc/x/y", true],
  ["abc/**", "x/abc/y", false],
  ["a/**/b", "a/b", true],
  ["a/**/b", "a/x/b", true],
  ["a/**/b", "a/x/y/b", true],
  ["a/**/b", "a/x/y/c", false],
  ["a**b", "axxb", true],
  ["a?c", "abc", true],
  ["a?c", "a/c", false],
  ["a?c", "aéc", false],
  ["a??c", "aéc", true],
  ["[a-c]x", "bx", true],
  ["[a-c]x", "dx", false],
  ["[!a-c]x", "dx", true],
  ["[^a-c]x", "ax", false],
  ["[[:digit:]]x", "7x", true],
  ["[[:digit:]]x", "ax", false],
  ["[]]x", "]x", true],
  ["[abc", "[abc", false],
  ["\\#x", "#x", true],
  ["#x", "#x", false],
  ["\\!x", "!x", true],
  ["a\\*", "a*", true],
  ["a\\*", "ab", false],
  ["trail  ", "trail", true],
  ["trail\\ ", "trail ", true],
  ["*.log\n!keep.log", "keep.log", false],
  ["*.log\n!keep.log", "other.log", true],
  ["!keep.log\n*.log", "keep.log", true],
  ["*\n!*/\n!*.c", "src/", false],
  ["*\n!*/\n!*.c", "src/a.c", false],
  ["*\n!*/\n!*.c", "src/a.h", true],
  ["line\nname with\\ space", "name with space", true],
  ["d\u00e9[a-z]*/x", "d\u00e9bc/x", true],
  ["d\u00e9[a-z]*/x", "de\u0301b/x", false],
  ["**/tmp/**", "a/tmp/b", true],
  ["**/tmp/**", "a/tmpx/b", false],
];

function rulesOf(text: string): RuleSet[] {
  return [parseIgnoreFile(Buffer.from(text), "")];
}

/** Ignored as a walk finds it: a directory ignored is not entered, so what is below it is ignored too. */
function walkIgnored(sets: RuleSet[], path: string): boolean {
  const isDirectory = path.endsWith("/");
  const parts = path.replace(/\/$/, "").split("/");
  for (let i = 1; i <= parts.length; i++) {
    const at = parts.slice(0, i).join("/");
    if (isIgnored(sets, at, i < parts.length || isDirectory)) return true;
  }
  return false;
}

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("git's ignore rules", () => {
  it.each(CASES)("%j ignores %j: %s", (gitignore, path, expected) => {
    expect(walkIgnored(rulesOf(gitignore), path)).toBe(expected);
  });

  it("agrees with git check-ignore on every case", () => {
    const disagree: string[] = [];
    for (const [gitignore, path, expected] of CASES) {
      const repo = mkdtempSync(join(tmpdir(), "harness-gitignore-"));
      made.push(repo);
      // Only this test repository's own rules: no user or system config, no global excludes.
      const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: repo };
      execFileSync("git", ["init", "-q", repo], { env });
      writeFileSync(join(repo, ".gitignore"), gitignore);
      const bare = path.replace(/\/$/, "");
      if (path.endsWith("/")) mkdirSync(join(repo, bare), { recursive: true });
      else {
        mkdirSync(dirname(join(repo, bare)), { recursive: true });
        writeFileSync(join(repo, bare), "");
      }
      let git: boolean;
      try {
        execFileSync("git", ["-c", "core.excludesFile=", "check-ignore", "-q", "--", bare], {
          cwd: repo,
          env,
          stdio: "ignore",
        });
        git = true;
      } catch (error) {
        if ((error as { status?: number }).status !== 1) throw error;
        git = false;
      }
      if (git !== expected) disagree.push(`${JSON.stringify(gitignore)} ${path}: git ${git}`);
    }
    expect(disagree).toEqual([]);
  });

  it("a nested .gitignore applies below its directory, before the root's, and is relative to it", () => {
    const sets = [
      parseIgnoreFile(Buffer.from("*.gen\n/top\n"), ""),
      parseIgnoreFile(Buffer.from("!keep.gen\n/local\n"), "sub"),
    ];
    expect(isIgnored(sets, "sub/x.gen", false)).toBe(true);
    expect(isIgnored(sets, "sub/keep.gen", false)).toBe(false);
    expect(isIgnored(sets, "keep.gen", false)).toBe(true);
    expect(isIgnored(sets, "sub/local", false)).toBe(true);
    expect(isIgnored(sets, "local", false)).toBe(false);
    expect(isIgnored(sets, "sub/top", false)).toBe(false);
    // A set for "sub" does not apply to "subway/".
    expect(isIgnored(sets, "subway/local", false)).toBe(false);
  });

  it("a hostile pattern costs its length times the name's, not a backtracking search", () => {
    const pattern = `${"*a".repeat(40)}b`;
    const name = "a".repeat(4000);
    expect(isIgnored(rulesOf(pattern), name, false)).toBe(false);
    expect(isIgnored(rulesOf(pattern), `${name}b`, false)).toBe(true);
  });

  it("skips a UTF-8 BOM and keeps a CR as part of the pattern, as git does", () => {
    const sets = [parseIgnoreFile(Buffer.from("\ufeffbom\ncr\r\n"), "")];
    expect(isIgnored(sets, "bom", false)).toBe(true);
    expect(isIgnored(sets, "cr", false)).toBe(false);
  });

  it("matches names that are not ASCII by their UTF-8 bytes, and names with a newline", () => {
    const sets = rulesOf("caf\u00e9\n*.d\u00e9j\u00e0\nline?break\n");
    expect(isIgnored(sets, "a/caf\u00e9", false)).toBe(true);
    expect(isIgnored(sets, "x.d\u00e9j\u00e0", false)).toBe(true);
    expect(isIgnored(sets, "line\nbreak", false)).toBe(true);
  });
});

describe("core.excludesFile in a git config", () => {
  it("takes the last value of [core], case-insensitively, unquoted, without a comment", () => {
    const text = [
      "[user]",
      "  excludesfile = /not/this",
      "[Core]",
      '  excludesFile = "/first path" # a comment',
      '[core "sub"]',
      "  excludesfile = /nor/this",
      "[core]",
      "\tEXCLUDESFILE = ~/.gitignore_global ; another",
    ].join("\n");
    expect(excludesFileIn(text)).toBe("~/.gitignore_global");
    expect(excludesFileIn('[core]\n excludesfile = "/a b"\n')).toBe("/a b");
    expect(excludesFileIn("[core]\n editor = vi\n")).toBeUndefined();
  });
});

describe("the user's global excludes", () => {
  function home(): string {
    const dir = mkdtempSync(join(tmpdir(), "harness-global-excludes-"));
    made.push(dir);
    return dir;
  }

  it("reads core.excludesFile from ~/.gitconfig (~/ expanded), else $XDG_CONFIG_HOME/git/ignore", () => {
    const h = home();
    const env = { HOME: h, XDG_CONFIG_HOME: join(h, "xdg") };
    expect(globalExcludes(env)).toBeUndefined();
    mkdirSync(join(h, "xdg", "git"), { recursive: true });
    writeFileSync(join(h, "xdg", "git", "ignore"), "*.swp\n");
    expect(isIgnored([globalExcludes(env) as RuleSet], "a/b.swp", false)).toBe(true);
    writeFileSync(join(h, ".gitconfig"), "[core]\n\texcludesFile = ~/dotfiles/ignore\n");
    mkdirSync(join(h, "dotfiles"));
    writeFileSync(join(h, "dotfiles", "real-ignore"), ".DS_Store\n");
    // A dotfile manager's link: followed, as git does (it is the user's, outside the workspace).
    symlinkSync(join(h, "dotfiles", "real-ignore"), join(h, "dotfiles", "ignore"));
    const sets = [globalExcludes(env) as RuleSet];
    expect(isIgnored(sets, "x/.DS_Store", false)).toBe(true);
    expect(isIgnored(sets, "a.swp", false)).toBe(false);
    expect(globalExcludes({ ...env, GIT_CONFIG_GLOBAL: join(h, "none") })?.rules).toHaveLength(1);
  });
});
