import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OutputStore } from "../../../src/tools/output-store.js";
import { createReadOutputTool } from "../../../src/tools/read-output-tool.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-outputs-continue-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Saves one long stdout through `store` and returns its id. */
function saveOne(store: OutputStore, text: string): string {
  const capture = store.begin();
  capture.write("stdout", Buffer.from(text));
  const [saved] = capture.finish(true);
  return saved?.id ?? "none";
}

describe("OutputStore in a continued run", () => {
  it("keeps earlier outputs readable by their ids and gives new ones higher ids", async () => {
    const earlier = new OutputStore({ dir, spillAfterBytes: 4 });
    expect(saveOne(earlier, "first run line\n")).toBe("out-1");
    expect(saveOne(earlier, "second output\n")).toBe("out-2");

    const continued = new OutputStore({ dir, spillAfterBytes: 4, adoptExisting: true });
    expect(saveOne(continued, "continued output\n")).toBe("out-3");
    expect(readFileSync(join(dir, "out-1.stdout"), "utf8")).toBe("first run line\n");
    const read = createReadOutputTool(continued);
    const result = await read.run(read.parse({ id: "out-1" }), {});
    expect(result.content).toContain("first run line");
    expect(continued.get("out-3", "stdout")?.path).toBe(join(dir, "out-3.stdout"));
  });

  it("never reuses an id the conversation named, even when its file was pruned", () => {
    const store = new OutputStore({ dir, spillAfterBytes: 4, adoptExisting: true, usedIds: 5 });
    expect(saveOne(store, "after pruning\n")).toBe("out-6");
    expect(store.get("out-5", "stdout")).toBeUndefined();
  });

  it("adopts only harness's own regular files, and reuses no name it found", () => {
    writeFileSync(join(dir, "notes.txt"), "x");
    writeFileSync(join(dir, "secret"), "s");
    symlinkSync(join(dir, "secret"), join(dir, "out-9.stdout"));
    const store = new OutputStore({ dir, spillAfterBytes: 4, adoptExisting: true });
    expect(store.get("out-9", "stdout")).toBeUndefined();
    expect(saveOne(store, "new output\n")).toBe("out-10");
  });
});
