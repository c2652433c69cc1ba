/**
 * Which path a sandbox's commands take: the executor (one per harness process and container,
 * started at open and again whenever it is gone) or, where the image cannot host a protected
 * executor, the per-call exec path, whose wrapper and end marker are in the command's reach. That
 * choice is said once, to the user and to the model. An executor that keeps dying (something in the
 * sandbox kills every new one) also ends on the per-call path rather than costing each call a start.
 */
import createDebug from "debug";
import type Docker from "dockerode";
import { Executor, ExecutorUnavailable } from "./executor.js";

const log = createDebug("harness:executor");

/** Executors lost one after the other, without a call that ended well between, before giving up on them. */
const MAX_LOSSES = 3;

/** Named wherever the per-call path is used: it is not protected against the command. */
export const PER_CALL_PATH_NOTICE =
  "commands run through the per-call exec path, whose end-of-command marker a command can forge";

export class ExecutorSlot {
  private executor: Executor | undefined;
  private starting: Promise<Executor | undefined> | undefined;
  private losses = 0;
  /** Why the per-call path is used from now on; undefined while executors are used. */
  private perCallBecause: string | undefined;
  private announced = false;

  constructor(
    private readonly user: string,
    /** Who the executor runs as (container-spec.ts: MACHINERY_USER, or the sandbox user). */
    private readonly machineryUser: string,
    /** `executor: false` (bench, tests): the per-call path from the start. */
    disabled: string | undefined,
  ) {
    this.perCallBecause = disabled;
    // A deliberate choice is the user's own: said in docs/executor.md, not announced on every run.
    this.announced = disabled !== undefined;
  }

  /** Which path commands take now: the per-call path once there is a reason for it. */
  get path(): "executor" | "per-call" {
    return this.perCallBecause === undefined ? "executor" : "per-call";
  }

  /** Starts an executor in the background (at open), so that the first call finds it ready. */
  prepare(container: Docker.Container): void {
    if (this.perCallBecause === undefined) void this.ready(container);
  }

  /**
   * The executor to run the next call on, started if needed; undefined for the per-call path. The
   * notice, once, when the per-call path was chosen for this sandbox.
   */
  async acquire(container: Docker.Container): Promise<{ executor?: Executor; notice?: string }> {
    if (this.executor?.alive) return { executor: this.executor };
    if (this.perCallBecause === undefined) {
      const executor = await this.ready(container);
      if (executor) return { executor };
    }
    if (this.announced || this.perCallBecause === undefined) return {};
    this.announced = true;
    return { notice: `${PER_CALL_PATH_NOTICE}: ${this.perCallBecause}` };
  }

  /** Whether an executor runs, once the one being started (if any) has started or failed; starts none. */
  async running(): Promise<boolean> {
    await this.starting?.catch(() => {});
    return this.executor?.alive === true;
  }

  /** A call ended with the executor's own report: the losses before it no longer count. */
  succeeded(): void {
    this.losses = 0;
  }

  /** The container was restarted or replaced: its executor went with it. */
  reset(): void {
    this.executor?.close(0).catch(() => {});
    this.executor = undefined;
  }

  /** How the current executor keeps commands apart from it and from each other; undefined without one. */
  get isolation(): Executor["isolation"] | undefined {
    return this.executor?.isolation;
  }

  /**
   * Ends the executor. Returns its census taken just before (executor.ts): true when nothing else
   * runs in the container; undefined when there was no executor to ask.
   */
  async close(): Promise<boolean | undefined> {
    await this.starting?.catch(() => {});
    const executor = this.executor;
    this.executor = undefined;
    if (!executor?.alive) return undefined;
    const alone = await executor.census();
    await executor.close();
    return alone;
  }

  /** The executor being started, or a new start. */
  private ready(container: Docker.Container): Promise<Executor | undefined> {
    this.starting ??= this.start(container).finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async start(container: Docker.Container): Promise<Executor | undefined> {
    if (this.executor !== undefined) {
      this.losses += 1;
      this.executor = undefined;
      if (this.losses >= MAX_LOSSES) {
        this.perCallBecause = `harness's executor in the sandbox was killed ${this.losses} times in a row`;
        return undefined;
      }
    }
    try {
      this.executor = await Executor.start(container, this.user, this.machineryUser);
      return this.executor;
    } catch (error) {
      log("executor did not start: %s", (error as Error).message);
      if (error instanceof ExecutorUnavailable) this.perCallBecause = error.message;
      // Any other failure (a full pid table, a wedged engine): this call takes the per-call path,
      // whose own failure handling restarts the container; the next call tries an executor again.
      return undefined;
    }
  }
}
