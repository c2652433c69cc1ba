import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { HostFile } from "../../../src/host-files/host-file.js";
import { OutputStore } from "../../../src/tools/output-store.js";
import { createReadOutputTool } from "../../../src/tools/read-output-tool.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-outputs-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lines = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`)
    .join("\n")
    .concat("\n");

describe("OutputStore", () => {
  it("writes nothing for output that stays under the spill size", () => {
    const store = new OutputStore({ dir: join(dir, "out"), spillAfterBytes: 100 });
    const capture = store.begin();
    capture.write("stdout", Buffer.from("short"));
    expect(capture.finish(true)).toEqual([]);
    expect(existsSync(join(dir, "out"))).toBe(false);
  });

  it("keeps every byte of a long stream when asked, and deletes it when not", () => {
    const store = new OutputStore({ dir, spillAfterBytes: 10 });
    const kept = store.begin();
    kept.write("stdout", Buffer.from("0123456789"));
    kept.write("stdout", Buffer.from("abcdef"));
    kept.write("stderr", Buffer.from("e"));
    const [saved, ...rest] = kept.finish(true);
    expect(rest).toEqual([]);
    expect(saved).toMatchObject({ id: "out-1", stream: "stdout", savedBytes: 16, totalBytes: 16 });
    expect(readFileSync(saved?.path ?? "", "utf8")).toBe("0123456789abcdef");
    expect(store.get("out-1", "stdout")?.path).toBe(saved?.path);
    const dropped = store.begin();
    dropped.write("stdout", Buffer.alloc(50, 120));
    expect(dropped.finish(false)).toEqual([]);
    expect(existsSync(join(dir, "out-2.stdout"))).toBe(false);
    expect(store.get("out-2", "stdout")).toBeUndefined();
  });

  it("bounds what it saves per stream and per run, and says how much was written", () => {
    const store = new OutputStore({ dir, spillAfterBytes: 4, maxBytesPerStream: 20, maxBytesPerRun: 30 });
    const first = store.begin();
    for (let i = 0; i < 10; i++) first.write("stdout", Buffer.alloc(10, 97));
    expect(first.finish(true)[0]).toMatchObject({ savedBytes: 20, totalBytes: 100 });
    const second = store.begin();
    for (let i = 0; i < 10; i++) second.write("stdout", Buffer.alloc(10, 98));
    expect(second.finish(true)[0]).toMatchObject({ savedBytes: 10, totalBytes: 100 });
  });
});

describe("OutputStore when the disk fails", () => {
  it("keeps nothing and never throws when its directory cannot be made", () => {
    const blocker = join(dir, "a-file");
    writeFileSync(blocker, "not a directory");
    const store = new OutputStore({ dir: join(blocker, "outputs"), spillAfterBytes: 10 });
    const capture = store.begin();
    for (let i = 0; i < 300; i++) capture.write("stdout", Buffer.alloc(1024, 120));
    expect(capture.finish(true)).toEqual([]);
    expect(store.get("out-1", "stdout")).toBeUndefined();
  });

  it("writes to a full disk are dropped, not thrown", () => {
    // /dev/full accepts the open and fails every write with ENOSPC.
    const store = new OutputStore({ dir, spillAfterBytes: 10 });
    const full = (): HostFile => {
      const fd = openSync("/dev/full", "w");
      const path = join(dir, "gone");
      return {
        path,
        openPath: path,
        created: true,
        identity: { dev: 0, ino: 0 },
        write: (data) => void writeSync(fd, Buffer.from(data)),
        check: () => {},
        readTail: () => Buffer.alloc(0),
        close: () => closeSync(fd),
      };
    };
    Object.assign(store, { open: full });
    const capture = store.begin();
    expect(() => capture.write("stdout", Buffer.alloc(100, 120))).not.toThrow();
    expect(() => capture.write("stdout", Buffer.alloc(100, 120))).not.toThrow();
    expect(capture.finish(true)).toEqual([]);
  });
});

describe("read_output tool", () => {
  async function storeWith(text: string): Promise<OutputStore> {
    const store = new OutputStore({ dir, spillAfterBytes: 1 });
    const capture = store.begin();
    capture.write("stdout", Buffer.from(text));
    capture.finish(true);
    return store;
  }

  it("shows a line range with line numbers", async () => {
    const tool = createReadOutputTool(await storeWith(lines(1, 1000)));
    const result = await tool.run(tool.parse({ id: "out-1", start_line: 500, end_line: 502 }), {});
    expect(result.isError).toBe(false);
    expect(result.content).toBe(
      "out-1 stdout: lines 500-502 of 1000.\n500: line 500\n501: line 501\n502: line 502",
    );
  });

  it("greps with line numbers", async () => {
    const tool = createReadOutputTool(await storeWith(`${lines(1, 20)}FAIL test_x\n${lines(22, 30)}`));
    const result = await tool.run(tool.parse({ id: "out-1", grep: "^FAIL" }), {});
    expect(result.content).toBe("out-1 stdout: 1 matching line(s) of 30.\n21: FAIL test_x");
  });

  it("stops a pattern that backtracks forever, and harness stays responsive", async () => {
    const tool = createReadOutputTool(await storeWith(`${"a".repeat(40)}b\n`), { scanTimeoutMs: 300 });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    const result = await tool.run(tool.parse({ id: "out-1", grep: "^(a+)+$" }), {});
    clearInterval(ticker);
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/took longer than 0.3 s and was stopped/);
    // The main thread kept running timers while the pattern spun in the worker.
    expect(ticks).toBeGreaterThan(3);
  });

  it("refuses unknown ids and bad input with messages the model can act on", async () => {
    const tool = createReadOutputTool(await storeWith(lines(1, 3)));
    expect((await tool.run(tool.parse({ id: "out-9" }), {})).content).toMatch(
      /no saved stdout with id 'out-9'/,
    );
    expect(() => tool.parse({ id: "out-1", grep: "(" })).toThrow(/not a valid regular expression/);
    expect(() => tool.parse({ id: "out-1", start_line: 0 })).toThrow(/start_line/);
    expect(() => tool.parse({ path: "/etc/passwd" })).toThrow(/`id` must be a string/);
  });
});

describe("bash tool with an output store", () => {
  it("saves the whole output of a cut command and tells the model its id", async () => {
    const { createBashTool } = await import("../../../src/tools/bash-tool.js");
    const { FakeSandbox } = await import("../../support/fake-sandbox.js");
    const full = lines(1, 5000);
    const sandbox = new FakeSandbox((command, options) => {
      if (command !== "seq") return { stdout: "ok\n" };
      options.onOutput?.("stdout", Buffer.from(full));
      return {
        stdout: `${full.slice(0, 100)}[cut]${full.slice(-100)}`,
        stdoutBytes: full.length,
        isTruncated: true,
      };
    });
    const store = new OutputStore({ dir });
    const bash = createBashTool(sandbox, { timeoutMs: 1000, outputStore: store });
    const result = await bash.run(bash.parse({ command: "seq" }), {});
    expect(result.content).toMatch(
      /full output was saved as out-1 \(stdout: [\d,]+ bytes\): read it with the read_output tool/,
    );
    expect(readFileSync(store.get("out-1", "stdout")?.path ?? "", "utf8")).toBe(full);
    const small = await bash.run(bash.parse({ command: "true" }), {});
    expect(small.content).not.toMatch(/saved as/);
  });
});
