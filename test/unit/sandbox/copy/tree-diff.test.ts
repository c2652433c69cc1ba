import { describe, expect, it } from "vitest";
import {
  countChanges,
  diffTrees,
  displayPath,
  formatChange,
  type Tree,
} from "../../../../src/sandbox/copy/tree-diff.js";

const file = (sha256: string, mode = 0o644) => ({ type: "file", mode, size: 1, sha256 });
const dir = (mode = 0o755) => ({ type: "directory", mode, size: 0 });
const link = (linkname: string) => ({ type: "symlink", mode: 0o777, size: 0, linkname });

describe("diffTrees", () => {
  const host: Tree = new Map([
    ["same.txt", file("s")],
    ["content.txt", file("old")],
    ["mode.sh", file("m", 0o644)],
    ["gone.txt", file("g")],
    ["became-dir", file("b")],
    ["link", link("same.txt")],
    ["src", dir()],
    ["ignored.log", file("i")],
  ]);
  const sandbox: Tree = new Map([
    ["same.txt", file("s")],
    ["content.txt", file("new")],
    ["mode.sh", file("m", 0o755)],
    ["became-dir", dir()],
    ["became-dir/x", file("x")],
    ["link", link("/etc/passwd")],
    ["src", dir(0o700)],
    ["fifo", { type: "fifo", mode: 0o644, size: 0 }],
    ["other.log", file("o")],
  ]);
  const changes = diffTrees(host, sandbox, (path) => path.endsWith(".log"));

  it("lists added, modified and deleted paths, sorted, and says what differs", () => {
    expect(changes.map((c) => [c.kind, c.path, c.differs.join(",")])).toEqual([
      ["M", "became-dir", "type"],
      ["A", "became-dir/x", ""],
      ["M", "content.txt", "content"],
      ["A", "fifo", ""],
      ["D", "gone.txt", ""],
      ["M", "link", "target"],
      ["M", "mode.sh", "mode"],
      ["M", "src", "mode"],
    ]);
    expect(countChanges(changes)).toEqual({ added: 2, modified: 5, deleted: 1 });
  });

  it("formats one line per change", () => {
    expect(changes.map(formatChange)).toEqual([
      "M became-dir/ (file -> directory)",
      "A became-dir/x",
      "M content.txt",
      "A fifo (fifo)",
      "D gone.txt",
      "M link -> /etc/passwd",
      "M mode.sh (mode 644 -> 755)",
      "M src/ (mode 755 -> 700)",
    ]);
  });

  it("notes a hard link and quotes names with control characters", () => {
    const hard = { ...file("s"), hardLinkTo: "same.txt" };
    expect(formatChange({ kind: "A", path: "second", differs: [], after: hard })).toBe(
      "A second (hard link to same.txt)",
    );
    expect(displayPath("evil\nname\u001b[2J")).toBe('"evil\\nname\\u001b[2J"');
    expect(displayPath("plain/ünïcode.txt")).toBe("plain/ünïcode.txt");
  });
});
