import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { reviewCopy, reviewCopyChanges } from "../../../src/cli/setup/copy-changes.js";
import type {
  ApplyResult,
  CopiedWorkspace,
  Sandbox,
  WorkspaceChanges,
} from "../../../src/sandbox/sandbox.js";

const CHANGES: WorkspaceChanges = {
  changes: [{ kind: "A", path: "a.txt", differs: [], after: { type: "file", mode: 0o644, size: 2 } }],
  counts: { added: 1, modified: 0, deleted: 0 },
  summary: "A a.txt\n1 change: 1 added, 0 modified, 0 deleted\n",
  diff: "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+\u001b]0;pwned\u0007hi\n",
  skipped: [],
  unsafeNames: [],
  conflicts: [],
};

function fakeSandbox(isolation: "bind" | "copy" = "copy") {
  const applied: WorkspaceChanges[] = [];
  const result: ApplyResult = {
    written: [],
    deleted: [],
    refused: [{ path: "evil", reason: "symlink to an absolute path (/etc/passwd)" }],
    notes: [],
  };
  const state = { settled: false };
  const copy = {
    exportChanges: async () => CHANGES,
    applyChanges: async (c: WorkspaceChanges) => {
      applied.push(c);
      return result;
    },
    settle: () => {
      state.settled = true;
    },
  };
  const sandbox = {
    description: { workspace: "/proj", isolation },
    copy: isolation === "copy" ? copy : undefined,
  } as unknown as Sandbox;
  return { sandbox, applied, copy: copy as unknown as CopiedWorkspace, state };
}

function io(tty: boolean, typed = "") {
  const stdin = Object.assign(new PassThrough(), { isTTY: tty }) as unknown as NodeJS.ReadStream;
  const stderr = new PassThrough();
  let text = "";
  stderr.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  if (typed) setTimeout(() => (stdin as unknown as PassThrough).write(typed), 10);
  return { io: { stdin, stderr }, text: () => text };
}

describe("reviewCopyChanges", () => {
  it("does nothing in bind mode", async () => {
    const { sandbox } = fakeSandbox("bind");
    expect(await reviewCopyChanges(sandbox, true, io(false).io)).toBe("bind-mode");
  });

  it("shows the summary and a sanitized diff, and applies nothing when stdin is not a terminal", async () => {
    const { sandbox, applied, state } = fakeSandbox();
    const out = io(false);
    expect(await reviewCopyChanges(sandbox, undefined, out.io)).toBe("not-applied");
    expect(applied).toEqual([]);
    expect(out.text()).toContain("A a.txt\n1 change: 1 added");
    expect(out.text()).toContain("+\\x1b]0;pwned\\x07hi\n");
    expect(out.text()).not.toContain("\u001b");
    expect(out.text()).toContain("pass --apply to apply them)\n");
    // Nobody decided: the copy is kept for `harness apply ID`.
    expect(out.text()).not.toContain("dropped");
    expect(state.settled).toBe(false);
  });

  it("applies with --apply and reports refusals by name", async () => {
    const { sandbox, applied, state } = fakeSandbox();
    const out = io(false);
    expect(await reviewCopyChanges(sandbox, true, out.io)).toBe("applied");
    expect(applied).toEqual([CHANGES]);
    expect(state.settled).toBe(true);
    expect(out.text()).toContain("harness: refused evil: symlink to an absolute path (/etc/passwd)\n");
  });

  it("never applies with --no-apply, even on a terminal: the copy is dropped", async () => {
    const { sandbox, applied, state } = fakeSandbox();
    const out = io(true, "y\n");
    expect(await reviewCopyChanges(sandbox, false, out.io)).toBe("not-applied");
    expect(applied).toEqual([]);
    expect(out.text()).toContain("changes not applied (--no-apply); the sandbox's copy is dropped\n");
    expect(state.settled).toBe(true);
  });

  it("asks on a terminal: y applies, anything else does not", async () => {
    const yes = fakeSandbox();
    const asked = io(true, "y\n");
    expect(await reviewCopyChanges(yes.sandbox, undefined, asked.io)).toBe("applied");
    expect(asked.text()).toContain("Apply these changes to /proj? [y/N] ");
    expect(yes.state.settled).toBe(true);
    const no = fakeSandbox();
    expect(await reviewCopyChanges(no.sandbox, undefined, io(true, "\n").io)).toBe("not-applied");
    expect(no.applied).toEqual([]);
    // A "no" at the question drops the session's copy.
    expect(no.state.settled).toBe(true);
  });

  it("harness apply ID: a no keeps the kept copy, --yes is the flag named", async () => {
    const no = fakeSandbox();
    const asked = io(true, "n\n");
    const options = { applyFlag: "--yes", noDrops: false };
    expect(await reviewCopy(no.copy, "/proj", undefined, asked.io, options)).toBe("not-applied");
    expect(no.state.settled).toBe(false);
    expect(asked.text()).toContain("changes not applied (not confirmed)\n");
    const piped = fakeSandbox();
    const out = io(false);
    expect(await reviewCopy(piped.copy, "/proj", undefined, out.io, options)).toBe("not-applied");
    expect(out.text()).toContain("changes not applied (pass --yes to apply them)\n");
    expect(piped.state.settled).toBe(false);
  });

  it("asks nobody once the session is ending (SIGHUP, SIGTERM): not applied, unless --apply", async () => {
    const ending = AbortSignal.abort();
    const asked = fakeSandbox();
    const out = io(true, "y\n");
    expect(await reviewCopyChanges(asked.sandbox, undefined, { ...out.io, ending })).toBe("not-applied");
    expect(asked.applied).toEqual([]);
    expect(out.text()).not.toContain("[y/N]");
    expect(out.text()).toContain("the session is ending; --apply applies them");
    expect(asked.state.settled).toBe(false);
    const apply = fakeSandbox();
    expect(await reviewCopyChanges(apply.sandbox, true, { ...io(true).io, ending })).toBe("applied");
  });
});
