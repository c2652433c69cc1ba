import type { CopiedWorkspace, Sandbox } from "../../src/sandbox/sandbox.js";

/** The copy isolation of a sandbox opened with `isolation: "copy"`; a bind sandbox fails the test. */
export function copyOf(sandbox: Sandbox): CopiedWorkspace {
  if (!sandbox.copy) throw new Error("the sandbox was opened in bind mode: it has no copy");
  return sandbox.copy;
}
