/**
 * Saved outputs in a directory the sandbox can write (a `--transcript` inside the workspace puts
 * them there): a link planted at the directory or swapped in at a saved file is never written or
 * read through, and harness is told.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type HostPathError, markSandboxWritable } from "../../../src/host-files/host-path.js";
import { OutputStore } from "../../../src/tools/output-store.js";
import { createReadOutputTool } from "../../../src/tools/read-output-tool.js";

const SECRET = "root-only-secret\n";
let root: string;
let ws: string;
let victimDir: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-output-links-")));
  ws = join(root, "ws");
  victimDir = join(root, "victim");
  mkdirSync(ws);
  mkdirSync(victimDir, { mode: 0o700 });
  writeFileSync(join(victimDir, "out-1.stdout"), SECRET, { mode: 0o600 });
  markSandboxWritable(ws);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join("");

describe("OutputStore in a sandbox-writable directory", () => {
  it("saves nothing through a symlink planted as its directory, and says so", () => {
    symlinkSync(victimDir, join(ws, "t.outputs"));
    const refused: HostPathError[] = [];
    const store = new OutputStore({
      dir: join(ws, "t.outputs"),
      spillAfterBytes: 1,
      onRefused: (e) => refused.push(e),
    });
    const capture = store.begin();
    capture.write("stdout", Buffer.from(lines(100)));
    expect(capture.finish(true)).toEqual([]);
    expect(readdirSync(victimDir)).toEqual(["out-1.stdout"]);
    expect(refused.map((e) => e.reason)).toEqual([
      `${join(ws, "t.outputs")} is a symlink (the sandbox can write there)`,
    ]);
  });

  it("keeps saving in the directory it opened when that is swapped for a link", () => {
    const store = new OutputStore({ dir: join(ws, "t.outputs"), spillAfterBytes: 1 });
    const first = store.begin();
    first.write("stdout", Buffer.from(lines(10)));
    first.finish(true);
    renameSync(join(ws, "t.outputs"), join(ws, "moved"));
    symlinkSync(victimDir, join(ws, "t.outputs"));
    const second = store.begin();
    second.write("stdout", Buffer.from(lines(10)));
    expect(second.finish(true)).toHaveLength(1);
    expect(readdirSync(victimDir)).toEqual(["out-1.stdout"]);
    expect(readdirSync(join(ws, "moved")).sort()).toEqual(["out-1.stdout", "out-2.stdout"]);
    store.close();
  });

  it("read_output never reads through a link swapped in at a saved file", async () => {
    const store = new OutputStore({ dir: join(ws, "t.outputs"), spillAfterBytes: 1 });
    const capture = store.begin();
    capture.write("stdout", Buffer.from(lines(10)));
    capture.finish(true);
    rmSync(join(ws, "t.outputs", "out-1.stdout"));
    symlinkSync(join(victimDir, "out-1.stdout"), join(ws, "t.outputs", "out-1.stdout"));
    const tool = createReadOutputTool(store);
    // The tool runner makes this an error result for the model.
    await expect(tool.run(tool.parse({ id: "out-1" }), {})).rejects.toThrow(/^ELOOP/);
    expect(readFileSync(join(victimDir, "out-1.stdout"), "utf8")).toBe(SECRET);
    store.close();
  });
});
