/**
 * The checkpoints of `harness run` (src/checkpoints/): one snapshot before the first tool call and
 * one after each, announced in the transcript. Bind mode walks the host workspace (the sandbox
 * writes there); copy mode lists the sandbox's copy and fetches only the files that changed (the
 * host workspace does not change during the run; src/checkpoints/copy-snapshot.ts).
 */
import { dirname } from "node:path";
import { checkpointsDirOf, sharedBlobsDir } from "../../checkpoints/checkpoint-paths.js";
import { DEFAULT_SNAPSHOT_LIMITS, type Manifest } from "../../checkpoints/checkpoint-types.js";
import { copySnapshots } from "../../checkpoints/copy-snapshot.js";
import { hostSnapshots } from "../../checkpoints/host-snapshot.js";
import { globalExcludes } from "../../checkpoints/ignore-sources.js";
import { RunCheckpointer, type SnapshotFn } from "../../checkpoints/run-checkpointer.js";
import { latestManifest, readSteps } from "../../checkpoints/step-log.js";
import { isSandboxWritable, openHostDir } from "../../host-files/host-path.js";
import type { MessageParam } from "../../model/model-client.js";
import { loadIgnoreMatcher } from "../../sandbox/copy/ignore-rules.js";
import type { CopiedWorkspace, Sandbox } from "../../sandbox/sandbox.js";
import type { Transcript } from "../../transcript/transcript.js";

export interface RunCheckpointsInput {
  sandbox: Sandbox;
  transcript: Transcript;
  /** `--no-checkpoints` gives false. */
  enabled: boolean;
  /** `--checkpoints all`: what git ignores is checkpointed too. */
  keepIgnored?: boolean;
  /** A continued run's conversation so far: its steps go on from the calls it holds. */
  history: readonly MessageParam[];
  env: NodeJS.ProcessEnv;
  /** A note for the user during the run (shown and recorded). */
  onNotice: (text: string) => void;
  /** A line for the user before the run starts (stderr; the transcript has no run_start yet). */
  progress: (line: string) => void;
}

/** The run's checkpointer (the loop takes its first snapshot); undefined when checkpoints are off. Never rejects. */
export async function openRunCheckpoints(input: RunCheckpointsInput): Promise<RunCheckpointer | undefined> {
  const { sandbox, transcript } = input;
  if (!input.enabled) return undefined;
  const root = sandbox.description.workspace;
  const copy = sandbox.copy;
  const checkpointsDir = checkpointsDirOf(transcript.path);
  const sharedDir = sharedBlobsDir(input.env);
  // Checkpoints are written by path: never where a sandbox can plant a link (a --transcript inside
  // the workspace puts them there), nor through a link on the way (host-files/).
  for (const dir of [checkpointsDir, sharedDir]) {
    const refusal = whyNotWritable(dir);
    if (refusal !== undefined) {
      input.progress(`checkpoints off for this run: ${refusal}`);
      return undefined;
    }
  }
  let previous: Manifest = new Map();
  try {
    previous = latestManifest(readSteps(checkpointsDir));
  } catch (error) {
    input.progress(`checkpoints: the earlier steps could not be read (${(error as Error).message})`);
  }
  const ignored = await loadIgnoreMatcher(root).catch(() => undefined);
  // By default what git ignores is left out, in both modes.
  const gitIgnore = input.keepIgnored === true ? undefined : { global: globalExcludes(input.env) };
  const host = copy === undefined ? hostSnapshots(root, ignored, undefined, gitIgnore) : undefined;
  const snapshot: SnapshotFn = host?.snapshot ?? copySnapshots(copy as CopiedWorkspace, { gitIgnore });
  const checkpointer = new RunCheckpointer({
    snapshot,
    checkpointsDir,
    sharedBlobsDir: sharedDir,
    firstStep: toolCallsIn(input.history),
    previous,
    limits: DEFAULT_SNAPSHOT_LIMITS,
    onCheckpoint: (record) => transcript.write({ type: "checkpoint", ...record }),
    onNotice: input.onNotice,
    ...(host === undefined ? {} : { close: host.close }),
  });
  return checkpointer;
}

/** Why harness will not write checkpoints in `dir`, or undefined when it will. */
function whyNotWritable(dir: string): string | undefined {
  try {
    const parent = openHostDir(dirname(dir), 0o700);
    try {
      if (isSandboxWritable(parent.realPath))
        return `${dir} would be inside a workspace the sandbox can write`;
    } finally {
      parent.close();
    }
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}

/** tool_use blocks in a conversation: the steps a continued run already has. */
function toolCallsIn(messages: readonly MessageParam[]): number {
  let calls = 0;
  for (const message of messages) {
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    calls += message.content.filter((block) => block.type === "tool_use").length;
  }
  return calls;
}
