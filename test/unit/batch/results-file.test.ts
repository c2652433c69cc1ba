import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BatchResult, ResultsWriter } from "../../../src/batch/results-file.js";
import { HostPathError, markSandboxWritable } from "../../../src/host-files/host-path.js";

let root: string;
let ws: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-results-")));
  ws = join(root, "ws");
  mkdirSync(ws);
  markSandboxWritable(ws);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const result = (id: string) => ({ type: "result", task_id: id }) as unknown as BatchResult;

describe("ResultsWriter", () => {
  it("ends a line cut off by a crash, then appends one line per result", () => {
    const path = join(ws, "results.jsonl");
    writeFileSync(path, '{"cut');
    const writer = new ResultsWriter(path);
    writer.append(result("a"));
    writer.append(result("b"));
    writer.close();
    expect(readFileSync(path, "utf8")).toBe(
      '{"cut\n{"type":"result","task_id":"a"}\n{"type":"result","task_id":"b"}\n',
    );
  });

  it("never appends through a symlink at the file or a parent inside a workspace", () => {
    const victim = join(root, "victim");
    writeFileSync(victim, "root only\n", { mode: 0o600 });
    symlinkSync(victim, join(ws, "results.jsonl"));
    expect(() => new ResultsWriter(join(ws, "results.jsonl")).append(result("a"))).toThrow(HostPathError);
    symlinkSync(root, join(ws, "up"));
    expect(() => new ResultsWriter(join(ws, "up", "victim")).append(result("a"))).toThrow(/up is a symlink/);
    expect(readFileSync(victim, "utf8")).toBe("root only\n");
  });
});
