/**
 * `DockerSandbox`: the Sandbox contract on one hardened container. How the workspace gets in (bind
 * or copy) is an `Isolation` chosen at open; this class runs commands, recovers the container when a
 * command broke it, and ends the run.
 */
import createDebug from "debug";
import type Docker from "dockerode";
import { EngineGoneError, SandboxError } from "../../errors.js";
import { type ContainerLease, takeLease } from "../../state/container-leases.js";
import { toExecResult } from "../exec/exec-outcome.js";
import type { ExecOutcome, ExecRequest } from "../exec/exec-types.js";
import { execRequest } from "../executor/exec-request.js";
import { PortPublisher } from "../publish/port-publisher.js";
import type {
  CopiedWorkspace,
  EgressMonitor,
  ExecOptions,
  ExecResult,
  PublishMonitor,
  Sandbox,
  SandboxDescription,
} from "../sandbox.js";
import { type PublishRequest, SANDBOX_DEFAULTS } from "../sandbox-request.js";
import { type AcquireResult, reviveContainer, waitUntilReady } from "./container/container-lifecycle.js";
import { healthCommand } from "./container/container-scripts.js";
import { MACHINERY_USER, rootMachinery, type SandboxSettings } from "./container/container-spec.js";
import { removeContainer } from "./container/remove-container.js";
import { containerRequest, planContainer } from "./container-plan.js";
import { postCreatePending, recordPostCreate } from "./devcontainer/post-create-pending.js";
import { checkEgressNetwork, type DockerSandboxOptions } from "./docker-sandbox-options.js";
import { RelayStartError } from "./egress/egress-relay.js";
import { EgressSession } from "./egress/egress-session.js";
import { classifyEngineError, engineUnreachable } from "./exec/docker-errors.js";
import { runSimpleExec } from "./exec/exec-helper.js";
import { hasPython } from "./executor/executor.js";
import { ExecutorSlot } from "./executor/executor-slot.js";
import { runInteractiveShell, type ShellIo } from "./interactive-shell.js";
import type { Isolation, LabelledCreateOptions } from "./isolation/isolation.js";
import { runDockerExec } from "./per-call/docker-exec.js";
import { neverStarted } from "./per-call/exec-end-report.js";
import { dockerForwarder } from "./publish/docker-forwarder.js";

const log = createDebug("harness:docker");

export type { DockerSandboxOptions };

export class DockerSandbox implements Sandbox {
  readonly workdir: string;
  /** True until the first command ran, and again after a recovery: the next one starts in the workspace. */
  private fresh = true;
  /** Where the next command starts (the last one's final cwd). */
  private cwd: string;
  private stopped = false;
  /** A command already ended with `EngineGoneError`: the end of the run does what it can, quietly. */
  private engineGone = false;
  /** The executor that runs commands, or the per-call path where there can be none. */
  private readonly executors: ExecutorSlot;
  /** This process's claim on the container, so that another process's end of run leaves it alone. */
  private lease: ContainerLease | undefined;
  /** `--publish`: the host's listeners; undefined when nothing is published. */
  private publisher: PortPublisher | undefined;
  /**
   * `--devcontainer`'s postCreateCommand, run as the sandbox user when this open created the
   * container, or reused one where it had failed (`again`); undefined when it did not run.
   */
  postCreate: { command: string; result: ExecResult; again: boolean } | undefined;

  private constructor(
    private container: Docker.Container,
    private readonly createOptions: LabelledCreateOptions,
    private readonly settings: SandboxSettings,
    private readonly options: DockerSandboxOptions,
    private readonly isolation: Isolation,
    /** How the container was obtained: "reused", "started" or "created". */
    readonly acquired: AcquireResult["acquired"],
    /** Allowlist mode's gateway and relay; undefined without one. */
    private readonly egressSession: EgressSession | undefined,
  ) {
    this.workdir = settings.workdir;
    this.cwd = settings.workdir;
    this.executors = new ExecutorSlot(
      settings.user,
      createOptions.User ?? settings.user,
      options.executor === false ? "the executor was turned off for this sandbox" : undefined,
    );
  }

  /**
   * How commands run: on the protected executor, or through the per-call exec path (an image without
   * python3, the executor turned off, or killed again and again), whose end marker a command can forge.
   */
  get commandPath(): "executor" | "per-call" {
    return this.executors.path;
  }

  get containerId(): string {
    return this.container.id;
  }

  /** The container's settings as resolved (image tag, real workspace path, user, limits). */
  get resolvedSettings(): Readonly<SandboxSettings> {
    return this.settings;
  }

  get description(): SandboxDescription {
    const s = this.settings;
    return {
      id: this.container.id,
      isolation: this.isolation.kind,
      workspace: s.workspace,
      workdir: s.workdir,
      image: s.image,
      user: s.user,
      network: this.egressSession ? "allowlist" : s.network,
      runtime: s.runtime,
      limits: { memoryBytes: s.memoryBytes, cpus: s.cpus, pidsLimit: s.pidsLimit },
      readOnlyPaths: this.isolation.protectedMounts.filter((m) => m.readOnly).map((m) => m.path),
    };
  }

  get copy(): CopiedWorkspace | undefined {
    return this.isolation.copy;
  }

  get egress(): EgressMonitor | undefined {
    return this.egressSession?.monitor;
  }

  get published(): PublishMonitor | undefined {
    return this.publisher;
  }

  static async open(options: DockerSandboxOptions): Promise<DockerSandbox> {
    checkEgressNetwork(options);
    const plan = await planContainer(options);
    const { workspace, user, isolation, engineKind, foreignImage } = plan;
    // The gateway first: its socket directory must exist before the container mounts it.
    const egress = options.egress
      ? await EgressSession.start(
          options.egress,
          options,
          workspace,
          isolation.kind,
          user,
          rootMachinery(engineKind, { foreignImage }) ? MACHINERY_USER : user,
        )
      : undefined;
    let sandbox: DockerSandbox;
    try {
      const { settings, createOptions } = containerRequest(plan, options, egress?.socketDir);
      const { container, acquired } = await isolation.acquire(createOptions);
      log("container %s %s for %s", container.id.slice(0, 12), acquired, workspace);
      sandbox = new DockerSandbox(container, createOptions, settings, options, isolation, acquired, egress);
      // The executor's exec (about 100 ms: the runtime entering the container, then python3) starts
      // now, beside the checks below, so that it is ready by the first command. It runs nothing until
      // a command is sent, which only happens once open has returned; a failed check ends it.
      // Allowlist mode starts it after the relay, whose start may restart the container.
      if (!egress) sandbox.executors.prepare(container);
      try {
        // A running container that was reused was checked when it started (an earlier run, or the
        // batch's warm pool, warm/warm-container.ts); only new or restarted ones wait.
        if (acquired !== "reused") {
          await isolation.verifyStarted();
          // An executor that said hello is an exec that ran in the container: the readiness check,
          // without a second exec (which the engine would queue behind the executor's).
          if (!(await sandbox.executors.running())) await waitUntilReady(container, user);
        }
        await isolation.begin();
      } catch (error) {
        await sandbox.executors.close().catch(() => {});
        await isolation.abandon(container).catch(() => {});
        throw error;
      }
      sandbox.lease = await takeLease(container.id, options.dockerEnv).catch(async (error: unknown) => {
        await sandbox.executors.close().catch(() => {});
        throw error;
      });
    } catch (error) {
      await egress?.close().catch(() => {});
      throw error;
    }
    // The keeper prunes the cache beside the start; no command may run before it is done.
    await plan.packageCache?.ready;
    if (egress) {
      await sandbox.startRelay();
      sandbox.executors.prepare(sandbox.container);
    }
    const postCreate = options.devcontainer?.postCreateCommand;
    if (postCreate !== undefined) {
      // Once per container, and again while it has not succeeded there.
      const again =
        sandbox.acquired !== "created" && postCreatePending(sandbox.containerId, options.dockerEnv);
      if (sandbox.acquired === "created" || again) await sandbox.runPostCreate(postCreate, again);
    }
    if (options.publish !== undefined && options.publish.length > 0) await sandbox.publish(options.publish);
    return sandbox;
  }

  /**
   * Allowlist mode, at open: the relay. A long-lived container that does not see the gateway's
   * socket mounted its directory before that directory was replaced (removed as stale, made again):
   * a restart mounts it afresh. Any failure ends the run as `stop` does, and is rethrown.
   */
  private async startRelay(): Promise<void> {
    try {
      try {
        await this.egressSession?.startRelay(this.container);
      } catch (error) {
        if (!(error instanceof RelayStartError && error.socketMissing)) throw error;
        await this.recover("the sandbox did not see harness's network gateway");
      }
    } catch (error) {
      await this.stop().catch((stopError: unknown) => log("stop after a failed open: %s", stopError));
      throw error;
    }
  }

  /**
   * `--publish`, at open: the host's listeners; each connection's forwarder runs as the sandbox
   * user, never as root. A failure ends the run as `stop` does, and is rethrown.
   */
  private async publish(requests: readonly PublishRequest[]): Promise<void> {
    try {
      this.publisher = await PortPublisher.start(requests, {
        open: dockerForwarder(() => this.container, this.settings.user),
      });
    } catch (error) {
      await this.stop().catch((stopError: unknown) => log("stop after a failed open: %s", stopError));
      throw error;
    }
  }

  /**
   * devcontainer.json's postCreateCommand, on a new container or `again` on one where it failed: a
   * command like any other (the sandbox user, the limits, allowlist mode's gateway). Its end is
   * recorded (post-create-pending.ts) so that a failure is tried again by the next open. An
   * infrastructure failure ends the run as `stop` does, and is rethrown; a failed command is data,
   * reported by the caller.
   */
  private async runPostCreate(command: string, again: boolean): Promise<void> {
    try {
      const result = await this.exec(command);
      this.postCreate = { command, result, again };
      recordPostCreate(this.containerId, result.exitCode === 0, this.options.dockerEnv);
    } catch (error) {
      await this.stop().catch((stopError: unknown) => log("stop after a failed open: %s", stopError));
      throw error;
    }
  }

  /** `KEY=value` entries every command gets: devcontainer.json's env, then allowlist mode's proxies. */
  private commandEnv(): string[] | undefined {
    const env = [...(this.options.devcontainer?.env ?? []), ...(this.egressSession?.env() ?? [])];
    return env.length === 0 ? undefined : env;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const notices: string[] = [];
    const egress = this.egressSession;
    const relayError = egress ? await this.checkRelay(egress, notices) : undefined;
    const tag = egress?.beginCall(options.callId);
    try {
      const result = await this.execAttempts(command, options, notices).catch((error: unknown) => {
        if (error instanceof EngineGoneError) this.engineGone = true;
        throw error;
      });
      // A recovery during the call started a relay after all: then the command had the network.
      if (relayError !== undefined && egress?.relayPort === undefined) {
        notices.push(
          `the sandbox's network relay could not be started again (${relayError}): this command had no network`,
        );
      }
      return tag && egress ? egress.callResult(result, tag) : result;
    } finally {
      egress?.endCall();
    }
  }

  /** Allowlist mode: the relay runs before the command does; returns why not when it cannot. */
  private async checkRelay(egress: EgressSession, notices: string[]): Promise<string | undefined> {
    try {
      const notice = await egress.ensureRelay(this.container);
      if (notice !== undefined) notices.push(notice);
      return undefined;
    } catch (error) {
      log("restarting the relay failed: %s", (error as Error).message);
      return (error as Error).message;
    }
  }

  private async execAttempts(command: string, options: ExecOptions, notices: string[]): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs ?? SANDBOX_DEFAULTS.timeoutMs;
    let attempt = await this.tryExec(command, options, timeoutMs, notices);
    if (attempt === "not-started") {
      notices.push(await this.recover("the sandbox could not start the command"));
      attempt = await this.tryExec(command, options, timeoutMs, notices);
      if (attempt === "not-started") {
        const error = new SandboxError("the sandbox cannot run commands even after a restart", {
          containerId: this.container.id,
        });
        throw await classifyEngineError(this.container, "running the command", error);
      }
    }
    const { outcome, startCwd } = attempt;
    if (outcome.killFailed) {
      notices.push(await this.recover("the command could not be killed from inside the sandbox"));
    } else if (outcome.wrapperLost && !outcome.timedOut && !outcome.canceled) {
      // The wrapper did not live to report: something killed it, or it could not even fork.
      const health = await this.checkHealth();
      if (health !== "ok") notices.push(await this.recover(health));
    }
    // After a recovery the next command starts afresh in the workspace.
    this.cwd = this.fresh ? this.workdir : (outcome.endCwd ?? startCwd);
    return toExecResult(command, outcome, {
      timeoutMs,
      memoryBytes: this.settings.memoryBytes,
      cwd: startCwd,
      notices,
    });
  }

  /** One attempt; "not-started" when the engine could not even start it (container down or wedged). */
  private async tryExec(
    command: string,
    options: ExecOptions,
    timeoutMs: number,
    notices: string[],
  ): Promise<{ outcome: ExecOutcome; startCwd: string } | "not-started"> {
    // The start directory is kept here, never in the container, where the command could rewrite it.
    const startCwd = this.fresh ? this.workdir : this.cwd;
    const place = { user: this.settings.user, workdir: this.workdir, startDir: startCwd, timeoutMs };
    const request = execRequest(command, options, place, this.options, this.commandEnv());
    let outcome: ExecOutcome | "not-started" | undefined = await this.onExecutor(request, notices);
    if (outcome === undefined) {
      try {
        outcome = await runDockerExec(this.container, request);
      } catch (error) {
        log("exec failed to start: %s", (error as Error).message);
        return "not-started";
      }
      if (neverStarted(outcome)) return "not-started";
    }
    if (outcome === "not-started") return outcome;
    this.fresh = false;
    return { outcome, startCwd };
  }

  /**
   * The command on the executor: its outcome, "not-started" when the executor could not fork it (a
   * full pid table: the container needs a restart), or undefined for the per-call path (no
   * executor, or one that was gone before the command started, twice).
   */
  private async onExecutor(
    request: ExecRequest,
    notices: string[],
  ): Promise<ExecOutcome | "not-started" | undefined> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const { executor, notice } = await this.executors.acquire(this.container);
      // Once, with the first command: the terminal, the transcript and the model all get it from there.
      if (notice !== undefined) notices.push(notice);
      if (executor === undefined) return undefined;
      const result = await executor.run(request);
      if (!("notRun" in result)) {
        if (!result.wrapperLost) this.executors.succeeded();
        return result;
      }
      log("executor did not run the command: %s", result.why);
      if (result.notRun === "fork-failed") return "not-started";
    }
    return undefined;
  }

  private async checkHealth(): Promise<"ok" | string> {
    const state = await this.container.inspect().catch(() => undefined);
    if (!state?.State.Running) return "the sandbox container stopped during the command";
    try {
      await runSimpleExec(this.container, healthCommand(), this.settings.user);
      return "ok";
    } catch {
      return "the sandbox's process limit is exhausted (a fork bomb?) or it cannot start processes";
    }
  }

  /**
   * Restarts, starts or recreates the container and says so, for the model. Where the engine itself
   * is what went away (the command's stream ended because the engine did), an `EngineGoneError`.
   */
  private async recover(why: string): Promise<string> {
    try {
      return await this.recoverNow(why);
    } catch (error) {
      throw await classifyEngineError(this.container, "running the command", error);
    }
  }

  private async recoverNow(why: string): Promise<string> {
    this.executors.reset();
    const done = await reviveContainer(this.container);
    if (done === "gone") {
      this.container = await this.isolation.replaceGone(this.createOptions);
      await this.lease?.release();
      this.lease = await takeLease(this.container.id, this.options.dockerEnv);
    }
    const action = done === "gone" ? "recreated (it was gone)" : done;
    try {
      // Every start mounts the bind sources again as they are now: check them as open() does.
      await this.isolation.verifyStarted(`before the sandbox container was ${action}; it was removed`);
    } catch (error) {
      await removeContainer(this.container).catch(() => {});
      throw error;
    }
    await waitUntilReady(this.container, this.settings.user);
    // The restart ended the relay with every other process.
    await this.egressSession?.startRelay(this.container);
    this.fresh = true;
    this.options.onProgress?.(`sandbox ${action}: ${why}`);
    return `${why}; the sandbox container was ${action}, so every process in it was stopped and the working directory is back to ${this.workdir}.`;
  }

  /** An interactive TTY shell in the workspace, as the sandbox user; resolves with its exit code. */
  async shell(io: ShellIo): Promise<number> {
    const egress = this.egressSession;
    if (egress) await egress.ensureRelay(this.container);
    // The shell enters its Landlock domain through python3 (interactive-shell.ts); an image without
    // one has no executor either (its commands take the per-call path), and the shell says so.
    const python =
      (await this.executors.running()) || (await hasPython(this.container, this.settings.user)) !== false;
    return runInteractiveShell(
      this.container,
      this.settings.user,
      this.workdir,
      io,
      this.commandEnv(),
      python,
    );
  }

  /**
   * Ends the run, once: bind isolation ends every process the run left and checks the workspace;
   * copy isolation (and `removeOnStop`) removes the container. In allowlist mode the relay goes
   * first (so it is not counted as a leftover) and the gateway last.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      // First, so that no forwarder is counted as a process the run left.
      await this.publisher?.close();
      await this.egressSession?.closeRelay();
      const nothingLeft = await this.executors.close();
      // Released before looking: of two processes ending at once, the later look sees nobody.
      await this.lease?.release();
      const othersAttached = (await this.lease?.othersAlive()) ?? false;
      await this.isolation
        .end(this.container, { othersAttached, nothingLeft: nothingLeft === true })
        .catch(async (error: unknown) => {
          // The run already ended on the engine's going away, and said so: nothing more to say here.
          // Its container's processes end with the engine (no live-restore) or are found by the next run.
          if (this.engineGone && engineUnreachable(error)) {
            log("end of run skipped, the engine is gone: %s", (error as Error).message);
            return;
          }
          throw await classifyEngineError(this.container, "ending the run", error);
        });
    } finally {
      await this.egressSession?.close();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
