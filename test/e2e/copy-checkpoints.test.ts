/**
 * Copy mode's checkpoints through the built CLI, a real Docker sandbox and the fake Messages API
 * (issue 34): what .gitignore ignores inside the sandbox's copy is left out of the checkpoints and
 * named by a restore, as in bind mode; a step that changed one file records only that file, and a
 * file replaced by a symlink, a name with a newline, a deletion and a rename land in their step.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

let stateHome: string;
let scratch: string;
beforeEach(() => {
  stateHome = mkdtempSync(join(tmpdir(), "harness-copy-checkpoints-state-"));
  scratch = mkdtempSync(join(tmpdir(), "harness-copy-checkpoints-out-"));
});
afterEach(() => {
  rmSync(stateHome, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

const runsDir = () => join(stateHome, "harness", "runs");
type Step = { step: number; delta: Record<string, { type: string; linkname?: string } | null> };

describe.skipIf(skipDocker)("copy mode's checkpoints", () => {
  const fake = useFakeApi();
  const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });

  it("leave out what .gitignore ignores, record each step's own changes, and restore them", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply(
        "bash",
        {
          command:
            "mkdir -p node_modules/pkg && echo m > node_modules/pkg/index.js && echo 'node_modules/' > .gitignore && echo a > a.txt && echo s > swap.txt && echo r > old.txt && echo d > gone.txt",
        },
        undefined,
        "toolu_k1",
      ),
      toolUseReply(
        "bash",
        { command: "echo n > node_modules/pkg/new.js && echo b >> a.txt" },
        undefined,
        "toolu_k2",
      ),
      toolUseReply(
        "bash",
        {
          command:
            "rm gone.txt && mv old.txt new.txt && rm swap.txt && ln -s /etc/passwd swap.txt && echo nl > 'two\nlines'",
        },
        undefined,
        "toolu_k3",
      ),
      textReply("Done."),
    );
    const run = await runCli(
      ["run", "--isolation", "copy", "--no-apply", "--workspace", ws.path, "install"],
      {
        env: env(),
      },
    );
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(run.code).toBe(0);
    const [name] = readdirSync(runsDir()).filter((n) => n.endsWith(".jsonl"));
    const runId = (name ?? "").slice(0, -".jsonl".length);
    const text = readFileSync(join(runsDir(), `${runId}.checkpoints`, "steps.jsonl"), "utf8");
    expect(text).not.toContain("index.js");
    expect(text).not.toContain("new.js");
    expect(text.match(/"notCheckpointed":\{"paths":\["node_modules"\]\}/g)).toHaveLength(1);
    const steps = text
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Step);
    const files = (step: Step) =>
      Object.entries(step.delta)
        .filter(([, entry]) => entry === null || entry.type !== "directory")
        .map(([path, entry]) => [path, entry === null ? "removed" : entry.type])
        .sort();
    expect(files(steps[2] as Step)).toEqual([["a.txt", "file"]]);
    expect(files(steps[3] as Step)).toEqual([
      ["gone.txt", "removed"],
      ["new.txt", "file"],
      ["old.txt", "removed"],
      ["swap.txt", "symlink"],
      ["two\nlines", "file"],
    ]);

    const restored = join(scratch, "step2");
    const restore = await runCli(["runs", "restore", runId, "--step", "2", "--to", restored], { env: env() });
    expect(restore.code).toBe(0);
    expect(restore.stderr).toBe(
      "harness: not restored: node_modules (ignored by .gitignore rules, so not checkpointed; --checkpoints all keeps them)\n",
    );
    expect(readFileSync(join(restored, "a.txt"), "utf8")).toBe("a\nb\n");
    expect(readdirSync(restored).sort()).toEqual([".gitignore", "a.txt", "gone.txt", "old.txt", "swap.txt"]);
  });
});
