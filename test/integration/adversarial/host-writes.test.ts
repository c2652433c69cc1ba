/**
 * A task whose bash commands plant links where harness writes on the host (a `--transcript` inside
 * the workspace, the saved-outputs directory beside it) must never make harness, running as root,
 * write through them: a root-only victim file stays as it was and nothing appears in a root-only
 * victim directory, and harness says what it refused. Through the built CLI, a real sandbox and the
 * fake Messages API; every outcome checked from the host.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../../support/docker-available.js";
import { useFakeApi } from "../../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../../support/fake-messages-api.js";
import { runCli } from "../../support/run-cli.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../../support/workspace.js";
import { removesContainerOf } from "../../support/workspace-container.js";

const VICTIM_TEXT = "root only, never to be touched\n";

let stateHome: string;
let victimDir: string;
let victim: string;
beforeEach(() => {
  stateHome = mkdtempSync(join(tmpdir(), "harness-hostwrites-state-"));
  victimDir = mkdtempSync(join(tmpdir(), "harness-victim-"));
  chmodSync(victimDir, 0o700);
  victim = join(victimDir, "victim");
  writeFileSync(victim, VICTIM_TEXT, { mode: 0o600 });
});
afterEach(() => {
  rmSync(stateHome, { recursive: true, force: true });
  rmSync(victimDir, { recursive: true, force: true });
});

/** The victim as it was: same text, and nothing else in its directory. */
function expectVictimUntouched(): void {
  expect(readFileSync(victim, "utf8")).toBe(VICTIM_TEXT);
  expect(readdirSync(victimDir)).toEqual(["victim"]);
}

/** Output long enough to be cut, so harness saves it whole in the outputs directory. */
const LONG = "seq 1 200000";

describe.skipIf(skipDocker)("adversarial: links planted where harness writes on the host", () => {
  const fake = useFakeApi();
  const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });

  it("a transcript and an outputs directory replaced by symlinks mid-run are never written through", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(
      toolUseReply("bash", {
        command: `rm -rf t.jsonl t.outputs && ln -s ${victim} t.jsonl && ln -s ${victimDir} t.outputs; ${LONG}`,
      }),
      toolUseReply("bash", { command: LONG }),
      textReply("Done."),
    );
    const run = await runCli(
      ["run", "--workspace", ws.path, "--transcript", join(ws.path, "t.jsonl"), "go"],
      {
        env: env(),
      },
    );
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expectVictimUntouched();
    expect(run.stderr).toMatch(/^harness: .*t\.jsonl.* symlink/m);
    expect(run.stderr).toMatch(/^harness: .*t\.outputs.* symlink/m);
  });

  it("a parent directory replaced by a symlink to a root-only directory gets nothing created in it", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const logs = join(ws.path, "logs");
    mkdirSync(logs);
    fake.api.enqueue(
      toolUseReply("bash", { command: `mv logs logs.old && ln -s ${victimDir} logs; ${LONG}` }),
      textReply("Done."),
    );
    const run = await runCli(["run", "--workspace", ws.path, "--transcript", join(logs, "t.jsonl"), "go"], {
      env: env(),
    });
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expectVictimUntouched();
    // The transcript goes on in the directory harness opened, now moved to logs.old; the outputs
    // directory, first needed after the swap, is refused.
    expect(readdirSync(join(ws.path, "logs.old"))).toEqual(["t.jsonl"]);
    expect(readFileSync(join(ws.path, "logs.old", "t.jsonl"), "utf8")).toContain('"type":"run_end"');
    expect(run.stderr).toMatch(/^harness: not writing .*t\.outputs: .*logs is a symlink/m);
  });

  it("swapping the files between steps, after harness wrote them, is refused too", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(
      toolUseReply("bash", { command: LONG }),
      toolUseReply("bash", {
        command: `mv t.jsonl t.old && ln -s ${victim} t.jsonl && mv t.outputs t.outputs.old && ln -s ${victimDir} t.outputs`,
      }),
      toolUseReply("bash", { command: LONG }),
      textReply("Done."),
    );
    const run = await runCli(
      ["run", "--workspace", ws.path, "--transcript", join(ws.path, "t.jsonl"), "go"],
      {
        env: env(),
      },
    );
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expectVictimUntouched();
    expect(run.stderr).toMatch(/^harness: .*t\.jsonl/m);
    // The outputs go on in the directory harness made (moved, not followed to the link).
    expect(readdirSync(join(ws.path, "t.outputs.old")).sort()).toEqual(["out-1.stdout", "out-3.stdout"]);
  });

  it("a hard link to a root-only file planted at the transcript's path is never appended to", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    // What a sandbox that may link files it does not own (root with CAP_FOWNER, protected_hardlinks
    // off) leaves behind; both are in /tmp, one filesystem.
    linkSync(victim, join(ws.path, "t.jsonl"));
    fake.api.enqueue(textReply("Done."));
    const run = await runCli(
      ["run", "--workspace", ws.path, "--transcript", join(ws.path, "t.jsonl"), "go"],
      {
        env: env(),
      },
    );
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(readFileSync(victim, "utf8")).toBe(VICTIM_TEXT);
    expect(run.stderr).toMatch(/^harness: .*t\.jsonl.*(hard link|links)/m);
  });

  it("the transcript swapped for a hard link to another file between steps is refused", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const notes = join(ws.path, "notes.txt");
    writeFileSync(notes, "notes\n");
    // The sandbox user's own file: protected_hardlinks lets it link only those.
    chownSync(notes, TEST_UID, TEST_GID);
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo one" }),
      toolUseReply("bash", { command: "rm t.jsonl && ln notes.txt t.jsonl" }),
      toolUseReply("bash", { command: "echo two" }),
      textReply("Done."),
    );
    const run = await runCli(
      ["run", "--workspace", ws.path, "--transcript", join(ws.path, "t.jsonl"), "go"],
      {
        env: env(),
      },
    );
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(readFileSync(notes, "utf8")).toBe("notes\n");
    expect(run.stderr).toMatch(/^harness: .*t\.jsonl.*replaced/m);
  });

  it("a fifo planted as the transcript neither hangs the run nor is written", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(
      toolUseReply("bash", { command: "rm t.jsonl && mkfifo t.jsonl" }),
      toolUseReply("bash", { command: "echo two" }),
      textReply("Done."),
    );
    const run = await runCli(
      ["run", "--workspace", ws.path, "--transcript", join(ws.path, "t.jsonl"), "go"],
      {
        env: env(),
        timeoutMs: 60_000,
      },
    );
    expect(run.code).not.toBeNull();
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(statSync(join(ws.path, "t.jsonl")).isFIFO()).toBe(true);
    expect(run.stderr).toMatch(/^harness: .*t\.jsonl.*replaced/m);
  });
});

describe.skipIf(skipDocker)("adversarial: --resume of a transcript the task rewrote", () => {
  const fake = useFakeApi();
  const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });

  it("never continues in the workspace a rewritten transcript records, and says which it would use", async () => {
    using ws = makeWorkspace();
    using other = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    await using _otherContainer = removesContainerOf(other.path);
    const transcript = join(ws.path, "t.jsonl");
    fake.api.enqueue(textReply("Done."));
    expect(
      (await runCli(["run", "--workspace", ws.path, "--transcript", transcript, "go"], { env: env() })).code,
    ).toBe(0);
    // The task's forgery: the same records, another workspace, written where harness's file was.
    const forged = readFileSync(transcript, "utf8").replaceAll(ws.path, other.path);
    writeFileSync(join(ws.path, "forged.jsonl"), forged);
    chmodSync(join(ws.path, "forged.jsonl"), 0o644);
    chownSync(join(ws.path, "forged.jsonl"), TEST_UID, TEST_GID);
    fake.api.enqueue(toolUseReply("bash", { command: "mv forged.jsonl t.jsonl" }), textReply("Moved."));
    await runCli(["run", "--workspace", ws.path, "--transcript", join(ws.path, "u.jsonl"), "go"], {
      env: env(),
    });
    expect(readFileSync(transcript, "utf8")).toContain(other.path);

    fake.api.enqueue(toolUseReply("bash", { command: "touch pwned" }), textReply("Done."));
    const resumed = await runCli(["run", "--resume", transcript, "go on"], { env: env() });
    expect(resumed.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(existsSync(join(other.path, "pwned"))).toBe(false);
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toMatch(/^harness: .*--workspace/m);
    expect(resumed.stderr).toContain(other.path);

    const named = await runCli(["run", "--resume", transcript, "--workspace", ws.path, "go on"], {
      env: env(),
    });
    expect(named.code).toBe(2);
    expect(named.stderr).toMatch(/is not the workspace of run/);
    expect(existsSync(join(other.path, "pwned"))).toBe(false);
    expect(existsSync(join(ws.path, "pwned"))).toBe(false);
  });

  it("says which workspace a resumed run uses", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(textReply("Done."));
    expect((await runCli(["run", "--workspace", ws.path, "go"], { env: env() })).code).toBe(0);
    fake.api.enqueue(textReply("Again."));
    const resumed = await runCli(["run", "--continue", "--workspace", ws.path, "go on"], { env: env() });
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(/^harness: continuing run \S+ in workspace (\S+) /m);
    expect(resumed.stderr).toContain(`in workspace ${ws.path}`);
  });
});
