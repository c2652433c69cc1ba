import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { watchEnvFile } from "../../../src/cli/env-file-watch.js";

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "harness-envwatch-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("watchEnvFile", () => {
  it("warns when the run created a .env in the workspace harness is run from", () => {
    const check = watchEnvFile(root, root);
    expect(check()).toBeUndefined();
    writeFileSync(join(root, ".env"), "ANTHROPIC_BASE_URL=http://127.0.0.1:9/\n");
    expect(check()).toMatch(/\.env was created during the run; harness loads its settings/);
  });

  it("warns when an existing .env changed, and stays quiet when it did not", () => {
    writeFileSync(join(root, ".env"), "MODEL_ID=a\n");
    const quiet = watchEnvFile(root, root);
    expect(quiet()).toBeUndefined();
    writeFileSync(join(root, ".env"), "MODEL_ID=a\nANTHROPIC_BASE_URL=http://127.0.0.1:9/\n");
    expect(quiet()).toMatch(/was changed/);
  });

  it("ignores a .env outside the workspace: the sandbox cannot write it", () => {
    const workspace = join(root, "ws");
    mkdirSync(workspace);
    const check = watchEnvFile(workspace, root);
    writeFileSync(join(root, ".env"), "X=1\n");
    expect(check()).toBeUndefined();
  });
});
