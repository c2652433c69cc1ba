/**
 * The agent loop's `StepCheckpoints` for one run: a snapshot of the workspace before the first call
 * (`start`) and after every call, each appended to the run's steps.jsonl and announced as a
 * `checkpoint` transcript record. A step's snapshot runs while the model is asked for its next
 * response; the loop settles it first when the next command is ready sooner. It never throws into the loop: a snapshot that fails or gives up
 * (a limit) is one notice, and checkpoints are off for the rest of the run.
 */
import type { StepCheckpoints } from "../agent/agent-types.js";
import type { ToolCall } from "../tools/tool.js";
import type { CheckpointRecord } from "../transcript/transcript-records.js";
import { BlobStore } from "./blob-store.js";
import type { Manifest, SnapshotLimits, StepRecord } from "./checkpoint-types.js";
import type { Snapshot } from "./snapshot.js";
import { appendStep } from "./step-log.js";

/** Takes one snapshot: of the host workspace (snapshot.ts) or of copy mode's copy (entries-snapshot.ts). */
export type SnapshotFn = (previous: Manifest, store: BlobStore, limits: SnapshotLimits) => Promise<Snapshot>;

export interface RunCheckpointerOptions {
  /** How a snapshot is taken. */
  snapshot: SnapshotFn;
  /** `<runs>/<id>.checkpoints`. */
  checkpointsDir: string;
  /** `<state>/checkpoints/blobs`. */
  sharedBlobsDir: string;
  /** The step the first snapshot records: 0 for a new run, the calls so far for a continued one. */
  firstStep: number;
  /** The manifest the first snapshot compares with (empty for a new run). */
  previous: Manifest;
  limits: SnapshotLimits;
  /** Each snapshot's facts, for the transcript. */
  onCheckpoint: (record: Omit<CheckpointRecord, "type" | "time">) => void;
  /** A note for the user (a snapshot gave up or failed). */
  onNotice: (text: string) => void;
  /** Milliseconds clock, for tests. */
  now?: () => number;
  /** Lets go of what the snapshots hold (bind mode's directory watches). */
  close?: () => void;
}

export class RunCheckpointer implements StepCheckpoints {
  private step: number;
  private previous: Manifest;
  /** The last `notCheckpointed` written, as JSON: a line names them only when they change. */
  private previousIgnored = JSON.stringify({ paths: [] });
  private off = false;
  /** The snapshots started and not yet awaited, in order. */
  private pending: Promise<void> = Promise.resolve();
  private readonly store: BlobStore;

  constructor(private readonly options: RunCheckpointerOptions) {
    this.step = options.firstStep;
    this.previous = options.previous;
    this.store = new BlobStore(options.sharedBlobsDir, `${options.checkpointsDir}/blobs`);
  }

  /** The checkpoint of the workspace as the run (or a prompt) starts: the step it goes on from. Never rejects. */
  async start(): Promise<void> {
    await this.settle();
    await this.take(undefined, this.step);
  }

  /** Starts the snapshot of the step `call` ended; `settle` waits for it. */
  afterToolCall(call: ToolCall): void {
    this.step += 1;
    const step = this.step;
    this.pending = this.pending.then(() => this.take(call.id, step));
  }

  settle(): Promise<void> {
    return this.pending;
  }

  private async take(callId: string | undefined, step: number): Promise<void> {
    if (this.off) return;
    const now = this.options.now ?? (() => performance.now());
    const started = now();
    const { options } = this;
    try {
      const snapshot = await options.snapshot(this.previous, this.store, options.limits);
      const record: StepRecord = {
        step,
        time: new Date().toISOString(),
        delta: snapshot.delta,
        counts: snapshot.counts,
      };
      if (callId !== undefined) record.callId = callId;
      if (snapshot.skipped.length > 0) record.skipped = snapshot.skipped.slice(0, 20);
      if (snapshot.gaveUp !== undefined) record.gaveUp = snapshot.gaveUp;
      else if (snapshot.ignored !== undefined && JSON.stringify(snapshot.ignored) !== this.previousIgnored) {
        record.notCheckpointed = snapshot.ignored;
        this.previousIgnored = JSON.stringify(snapshot.ignored);
      }
      appendStep(options.checkpointsDir, record);
      if (snapshot.manifest !== undefined) this.previous = snapshot.manifest;
      options.onCheckpoint({
        step,
        ...(callId === undefined ? {} : { callId }),
        ...snapshot.counts,
        skipped: snapshot.skipped.length,
        durationMs: Math.round(now() - started),
        ...(snapshot.gaveUp === undefined ? {} : { gaveUp: snapshot.gaveUp }),
      });
      if (snapshot.gaveUp !== undefined)
        this.stop(`checkpoints stopped at step ${this.step}: ${snapshot.gaveUp}`);
    } catch (error) {
      // A full disk stops the checkpoints, never the run: the line names what could not be written.
      const message = (error as Error).message;
      const where = message.includes(options.checkpointsDir) ? "" : ` (in ${options.checkpointsDir})`;
      this.stop(`checkpoints stopped at step ${this.step}: ${message}${where}`);
    }
  }

  /** Waits for the last snapshot, then lets go of the watches. Never rejects. */
  async close(): Promise<void> {
    await this.settle();
    this.options.close?.();
  }

  private stop(note: string): void {
    this.off = true;
    this.options.onNotice(`${note}; later steps have no checkpoint (--no-checkpoints turns them off)`);
  }
}
