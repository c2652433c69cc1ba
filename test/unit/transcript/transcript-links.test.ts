/**
 * A transcript in a directory the sandbox can write (`--transcript` inside the workspace): a link or
 * another file swapped in at its name is never written through; harness is told once and stops.
 */
import {
  mkdirSync,
  mkdtempSync,
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
import { createTranscript } from "../../../src/transcript/transcript.js";

const VICTIM = "root only\n";
let root: string;
let ws: string;
let victim: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-transcript-links-")));
  ws = join(root, "ws");
  mkdirSync(ws);
  victim = join(root, "victim");
  writeFileSync(victim, VICTIM, { mode: 0o600 });
  markSandboxWritable(ws);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("createTranscript in a sandbox-writable directory", () => {
  it("never appends through a symlink swapped in between two records, and says so once", () => {
    const refused: HostPathError[] = [];
    const transcript = createTranscript(join(ws, "t.jsonl"), { onRefused: (error) => refused.push(error) });
    transcript.onNotice("one");
    renameSync(join(ws, "t.jsonl"), join(ws, "t.old"));
    symlinkSync(victim, join(ws, "t.jsonl"));
    transcript.onNotice("two");
    transcript.onNotice("three");
    transcript.close();
    expect(readFileSync(victim, "utf8")).toBe(VICTIM);
    expect(readFileSync(join(ws, "t.old"), "utf8")).toMatch(/"text":"one"\}\n$/);
    expect(refused.map((error) => error.message)).toEqual([
      `not writing ${join(ws, "t.jsonl")}: it was replaced by a symlink since harness opened it (the sandbox can write there)`,
    ]);
  });

  it("refuses a symlink planted before the first record, at the file or a parent", () => {
    const refused: string[] = [];
    symlinkSync(victim, join(ws, "t.jsonl"));
    createTranscript(join(ws, "t.jsonl"), { onRefused: (error) => refused.push(error.reason) }).onNotice("x");
    symlinkSync(root, join(ws, "logs"));
    createTranscript(join(ws, "logs", "victim"), {
      onRefused: (error) => refused.push(error.reason),
    }).onNotice("x");
    expect(readFileSync(victim, "utf8")).toBe(VICTIM);
    expect(refused).toEqual([
      "it is a symlink (the sandbox can write there)",
      `${join(ws, "logs")} is a symlink (the sandbox can write there)`,
    ]);
  });

  it("writes nothing after close, whatever is at the name then", () => {
    const refused: string[] = [];
    const transcript = createTranscript(join(ws, "t.jsonl"), {
      onRefused: (error) => refused.push(error.reason),
    });
    transcript.onNotice("one");
    transcript.close();
    rmSync(join(ws, "t.jsonl"));
    writeFileSync(join(ws, "t.jsonl"), "forged\n");
    transcript.onNotice("two");
    expect(readFileSync(join(ws, "t.jsonl"), "utf8")).toBe("forged\n");
    expect(refused).toEqual([]);
  });
});
