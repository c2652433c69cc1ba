import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { reviewCopyChanges } from "../../../src/cli/setup/copy-changes.js";
import type { ApplyResult, Sandbox, WorkspaceChanges } from "../../../src/sandbox/sandbox.js";

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
  const copy = {
    exportChanges: async () => CHANGES,
    applyChanges: async (c: WorkspaceChanges) => {
      applied.push(c);
      return result;
    },
  };
  const sandbox = {
    description: { workspace: "/proj", isolation },
    copy: isolation === "copy" ? copy : undefined,
  } as unknown as Sandbox;
  return { sandbox, applied };
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
    const { sandbox, applied } = fakeSandbox();
    const out = io(false);
    expect(await reviewCopyChanges(sandbox, undefined, out.io)).toBe("not-applied");
    expect(applied).toEqual([]);
    expect(out.text()).toContain("A a.txt\n1 change: 1 added");
    expect(out.text()).toContain("+\\x1b]0;pwned\\x07hi\n");
    expect(out.text()).not.toContain("\u001b");
    expect(out.text()).toContain("pass --apply to apply them");
  });

  it("applies with --apply and reports refusals by name", async () => {
    const { sandbox, applied } = fakeSandbox();
    const out = io(false);
    expect(await reviewCopyChanges(sandbox, true, out.io)).toBe("applied");
    expect(applied).toEqual([CHANGES]);
    expect(out.text()).toContain("harness: refused evil: symlink to an absolute path (/etc/passwd)\n");
  });

  it("never applies with --no-apply, even on a terminal", async () => {
    const { sandbox, applied } = fakeSandbox();
    expect(await reviewCopyChanges(sandbox, false, io(true, "y\n").io)).toBe("not-applied");
    expect(applied).toEqual([]);
  });

  it("asks on a terminal: y applies, anything else does not", async () => {
    const yes = fakeSandbox();
    const asked = io(true, "y\n");
    expect(await reviewCopyChanges(yes.sandbox, undefined, asked.io)).toBe("applied");
    expect(asked.text()).toContain("Apply these changes to /proj? [y/N] ");
    const no = fakeSandbox();
    expect(await reviewCopyChanges(no.sandbox, undefined, io(true, "\n").io)).toBe("not-applied");
    expect(no.applied).toEqual([]);
  });

  it("asks nobody once the session is ending (SIGHUP, SIGTERM): not applied, unless --apply", async () => {
    const ending = AbortSignal.abort();
    const asked = fakeSandbox();
    const out = io(true, "y\n");
    expect(await reviewCopyChanges(asked.sandbox, undefined, { ...out.io, ending })).toBe("not-applied");
    expect(asked.applied).toEqual([]);
    expect(out.text()).not.toContain("[y/N]");
    expect(out.text()).toContain("the session is ending; --apply applies them");
    const apply = fakeSandbox();
    expect(await reviewCopyChanges(apply.sandbox, true, { ...io(true).io, ending })).toBe("applied");
  });
});
