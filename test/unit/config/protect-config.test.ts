import { describe, expect, it } from "vitest";
import { loadSandboxConfig } from "../../../src/config.js";

describe("loadSandboxConfig: --protect and --no-protect", () => {
  it("protects by default, adds --protect paths, and --no-protect turns it off", () => {
    expect(loadSandboxConfig({}, {}).protect).toEqual({ disabled: false, extraPaths: [] });
    expect(loadSandboxConfig({}, { protect: ["Makefile", ".github//workflows/"] }).protect).toEqual({
      disabled: false,
      extraPaths: ["Makefile", ".github/workflows"],
    });
    expect(loadSandboxConfig({}, { protect: false }).protect).toEqual({ disabled: true, extraPaths: [] });
  });

  it("refuses paths outside the workspace before anything starts", () => {
    expect(() => loadSandboxConfig({}, { protect: ["../elsewhere"] })).toThrow(
      /--protect takes a path inside/,
    );
    expect(() => loadSandboxConfig({}, { protect: ["/etc"] })).toThrow(/--protect takes a path inside/);
  });

  it("cannot be turned off from the environment, where a workspace .env could do it", () => {
    const env = { HARNESS_PROTECT: "", HARNESS_NO_PROTECT: "1" };
    expect(loadSandboxConfig(env, {}).protect.disabled).toBe(false);
  });
});
