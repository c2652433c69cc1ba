/**
 * `KubernetesSandbox`: the Sandbox contract on one hardened pod (pod-spec.ts) per sandbox. The
 * workspace is always copied in (pod-copy.ts): a cluster cannot mount this machine's directory.
 * Commands run on the executor (pod-executor.ts), the same program as on Docker, over the exec API.
 * A pod cannot be restarted without losing its copy, so where Docker recovers a container, a pod
 * that is gone ends the run with a SandboxError that says so.
 */
import { randomUUID } from "node:crypto";
import createDebug from "debug";
import { SandboxError } from "../../errors.js";
import { planWorkspaceCopy } from "../copy/workspace-archive.js";
import type { ShellIo } from "../docker/interactive-shell.js";
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
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";
import type { Cluster } from "./api/kube-client.js";
import { asUser, runInPod } from "./api/pod-command.js";
import type { PodTarget } from "./api/pod-exec.js";
import { claimHardenedPod } from "./claim/hardened-claim.js";
import { releaseClaim } from "./claim/warm-pool-claim.js";
import { defaultPodImage } from "./default-image.js";
import { PodEgress } from "./egress/pod-egress.js";
import type { KubernetesSandboxOptions } from "./kubernetes-options.js";
import { type KeptPodLookup, keptManifest, letGo, resetPod, takeKeptPod } from "./pod/kept-pod.js";
import { createPod, deletePod, podLost, waitRunning } from "./pod/pod-lifecycle.js";
import { removeOrphanedPods } from "./pod/pod-registry.js";
import { type PodSettings, podManifest, podName, SANDBOX_CONTAINER } from "./pod/pod-spec.js";
import { copyIntoPod, PodCopiedWorkspace } from "./pod-copy.js";
import { PodExecutor } from "./pod-executor.js";
import { podForwarder } from "./pod-forwarder.js";
import { planPod } from "./pod-plan.js";
import { runPodShell } from "./pod-shell.js";
import { takeWarmPod } from "./warm-pod.js";

const log = createDebug("harness:kubernetes");

export type { KubernetesSandboxOptions };

export { defaultPodImage };

export class KubernetesSandbox implements Sandbox {
  readonly workdir: string;
  private fresh = true;
  private cwd: string;
  private stopped = false;
  private executor: PodExecutor | undefined;
  private starting: Promise<PodExecutor> | undefined;
  private readonly copied: PodCopiedWorkspace;
  /** `--publish`: the host's listeners; undefined when nothing is published. */
  private publisher: PortPublisher | undefined;
  /** Ends the pod: deletes it, or releases the warm pool's claim on it (--kube-warm-pool). */
  private release: () => Promise<void> = () => deletePod(this.cluster, this.target.pod);

  private constructor(
    private readonly cluster: Cluster,
    private readonly target: PodTarget,
    private readonly settings: PodSettings,
    private readonly options: KubernetesSandboxOptions,
    plan: Awaited<ReturnType<typeof planWorkspaceCopy>>,
    /** Allowlist mode's gateway and mux; undefined without one. */
    private readonly podEgress: PodEgress | undefined,
  ) {
    this.workdir = settings.workdir;
    this.cwd = settings.workdir;
    this.copied = new PodCopiedWorkspace(target, plan, settings.user, settings.workdir, {
      protect: options.protect,
      quiesce: () => this.quiesce(),
    });
  }

  /** The pod's name. */
  get podName(): string {
    return this.target.pod;
  }

  get namespace(): string {
    return this.cluster.namespace;
  }

  get description(): SandboxDescription {
    const s = this.settings;
    return {
      id: this.target.pod,
      isolation: "copy",
      workspace: s.workspace,
      workdir: s.workdir,
      image: s.image,
      user: s.user,
      network: this.podEgress ? "allowlist" : s.network,
      runtime: s.runtimeClassName,
      limits: {
        memoryBytes: s.memoryBytes,
        cpus: s.cpus,
        pidsLimit: this.options.pidsLimit ?? SANDBOX_DEFAULTS.pidsLimit,
      },
      readOnlyPaths: [],
    };
  }

  get copy(): CopiedWorkspace {
    return this.copied;
  }

  get egress(): EgressMonitor | undefined {
    return this.podEgress?.monitor;
  }

  get published(): PublishMonitor | undefined {
    return this.publisher;
  }

  static async open(options: KubernetesSandboxOptions): Promise<KubernetesSandbox> {
    const t0 = performance.now();
    const since = () => Math.round(performance.now() - t0);
    const { cluster, settings, workspace, user } = await planPod(options);
    const d = SANDBOX_DEFAULTS;
    const plan = await planWorkspaceCopy(
      workspace,
      options.copyLimitBytes ?? d.copyLimitBytes,
      options.copyMaxFiles ?? d.copyMaxFiles,
    );
    const startTimeoutMs = options.startTimeoutMs ?? 120_000;
    // --kube-warm-pool: the cluster's pool (agent-sandbox) is the warm pool, not the batch's.
    const warm =
      options.warmPool === undefined &&
      options.warmPod !== undefined &&
      (await takeWarmPod(cluster, options.warmPod, settings));
    // Pods a harness process on this machine left when it died (a second Ctrl-C, kill -9) go first.
    await removeOrphanedPods(cluster);
    log("open: planned, orphans looked for (%d ms)", since());
    const egress = options.egress ? await PodEgress.start(options.egress, options) : undefined;
    let claim: Awaited<ReturnType<typeof claimHardenedPod>> | undefined;
    let kept: KeptPodLookup | undefined;
    try {
      if (options.warmPool !== undefined)
        claim = await claimHardenedPod(cluster, settings, options.warmPool, startTimeoutMs);
      // The CLI's sessions keep one pod per workspace (pod/kept-pod.ts); a batch's task, a replay and
      // a warm pool's pod are deleted at their end.
      else if (options.keepPod === true && options.warmPod === undefined)
        kept = await keptPodFor(cluster, settings, options);
    } catch (error) {
      await egress?.close().catch(() => {});
      throw error;
    }
    const name =
      claim?.pod ??
      (warm && options.warmPod !== undefined
        ? options.warmPod
        : kept?.kind === "reuse"
          ? kept.pod
          : podName(workspace));
    const target: PodTarget = {
      kc: cluster.kc,
      namespace: cluster.namespace,
      pod: name,
      container: SANDBOX_CONTAINER,
    };
    const sandbox = new KubernetesSandbox(cluster, target, settings, options, plan, egress);
    if (claim !== undefined) sandbox.release = () => releaseClaim(cluster, claim);
    else if (kept !== undefined && kept.kind !== "busy") sandbox.release = () => sandbox.keepForNext();
    try {
      if (claim !== undefined)
        log("pod %s claimed from the warm pool %s (%s)", name, claim.pool, claim.claim);
      else if (warm) log("pod %s taken from the warm pool", name);
      else if (kept?.kind === "reuse") log("kept pod %s reused, reset (%d ms)", name, since());
      else {
        const session = randomUUID();
        const keptNow = kept?.kind === "create";
        await createPod(
          cluster,
          keptNow ? keptManifest(settings, name, session) : podManifest(settings, name, session),
        );
        log("pod %s created%s (%d ms)", name, keptNow ? " to be kept" : "", since());
      }
      if (kept?.kind !== "reuse") await waitRunning(cluster, name, startTimeoutMs);
      log("pod %s running (%d ms)", name, since());
      // The executor's, the copy's and the mux's execs go side by side; no command is sent before all are done.
      // All three are waited for, also when one fails, so that none is left running after the cleanup.
      const steps = await Promise.allSettled([
        sandbox.startExecutor(),
        copyIntoPod(target, plan, user, settings.workdir),
        egress?.startMux(target, user),
        egress?.installTrust(target, user),
      ]);
      const failed = steps.find((step) => step.status === "rejected");
      if (failed) throw failed.reason;
      log("pod %s ready for %s (%d ms)", name, workspace, since());
      // Last, as on Docker: a connection is only accepted once the pod can take it. Each
      // connection's forwarder is an exec as the sandbox user; the pod gets no port of its own.
      if (options.publish !== undefined && options.publish.length > 0) {
        sandbox.publisher = await PortPublisher.start(options.publish, {
          open: podForwarder(target, settings.user),
        });
      }
    } catch (error) {
      sandbox.stopped = true;
      await sandbox.executor?.close().catch(() => {});
      await sandbox.release().catch(() => {});
      await egress?.close().catch(() => {});
      throw error;
    }
    return sandbox;
  }

  /**
   * The end of a session on the workspace's kept pod: every process of the sandbox user ended, the
   * copy and the scratch directories emptied, the pod marked idle for the next session; a pod that
   * cannot be made clean is deleted instead.
   */
  private async keepForNext(): Promise<void> {
    try {
      await resetPod(this.target, this.settings);
      await letGo(this.cluster, this.target.pod);
      log("pod %s kept for the next session", this.target.pod);
    } catch (error) {
      log("pod %s not kept: %s", this.target.pod, (error as Error).message);
      await deletePod(this.cluster, this.target.pod);
    }
  }

  private startExecutor(): Promise<PodExecutor> {
    this.starting ??= PodExecutor.start(this.target, this.settings.user).then(
      (executor) => {
        this.executor = executor;
        this.starting = undefined;
        return executor;
      },
      (error: unknown) => {
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  /** A live executor, or a SandboxError when none can be started (the pod is gone, or its image cannot host one). */
  private async liveExecutor(): Promise<PodExecutor> {
    if (this.executor?.alive) return this.executor;
    try {
      return await this.startExecutor();
    } catch (error) {
      throw await this.lostError("the sandbox could not start its executor", error);
    }
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.stopped) throw new SandboxError("the sandbox was stopped", { containerId: this.target.pod });
    const egress = this.podEgress;
    const notices: string[] = [];
    if (egress) {
      const notice = await egress.ensureMux(this.target, this.settings.user).catch((error: unknown) => {
        log("starting the mux failed: %s", (error as Error).message);
        return `the sandbox's network relay could not be started (${(error as Error).message}): this command had no network`;
      });
      if (notice !== undefined) notices.push(notice);
    }
    const tag = egress?.beginCall(options.callId);
    try {
      const result = await this.execOnPod(command, options, notices);
      return tag && egress ? egress.callResult(result, tag) : result;
    } finally {
      egress?.endCall();
    }
  }

  private async execOnPod(command: string, options: ExecOptions, notices: string[]): Promise<ExecResult> {
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs ?? SANDBOX_DEFAULTS.timeoutMs;
    const startCwd = this.fresh ? this.workdir : this.cwd;
    const place = { user: this.settings.user, workdir: this.workdir, startDir: startCwd, timeoutMs };
    const request = execRequest(command, options, place, this.options, this.podEgress?.env());
    const outcome = await this.runOnExecutor(request);
    if (outcome.killFailed || (outcome.wrapperLost && !outcome.timedOut && !outcome.canceled)) {
      // The executor's exec ended under the command: the pod may be gone (deleted, evicted, its
      // node lost). If it is, so is the copy: the run cannot go on.
      const lost = await podLost(this.cluster, this.target.pod);
      if (lost !== undefined) throw this.goneError(`${lost} during the command`);
    }
    this.fresh = false;
    this.cwd = outcome.endCwd ?? startCwd;
    return toExecResult(command, outcome, {
      timeoutMs,
      memoryBytes: this.settings.memoryBytes,
      cwd: startCwd,
      notices,
    });
  }

  /** Runs on the executor, starting a new one when the last ended before the command started (twice). */
  private async runOnExecutor(request: ExecRequest): Promise<ExecOutcome> {
    for (let attempt = 0; ; attempt++) {
      const executor = await this.liveExecutor();
      const result = await executor.run(request);
      if (!("notRun" in result)) return result;
      log("executor did not run the command: %s", result.why);
      if (attempt >= 1) throw await this.lostError(`the sandbox could not run the command (${result.why})`);
      // A fork that failed (no pids left) may pass once the command's processes are gone.
      if (result.notRun === "fork-failed") await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  /** The error to end the run with: the pod's fate when it is gone, else `why`. */
  private async lostError(why: string, cause?: unknown): Promise<SandboxError> {
    const lost = await podLost(this.cluster, this.target.pod);
    if (lost !== undefined) return this.goneError(lost);
    const detail = cause instanceof Error ? `: ${cause.message}` : "";
    return new SandboxError(`${why}${detail}`, { containerId: this.target.pod, cause });
  }

  private goneError(what: string): SandboxError {
    return new SandboxError(
      `${what} (pod ${this.cluster.namespace}/${this.target.pod}); its copy of the workspace went with it, and nothing was applied`,
      { containerId: this.target.pod },
    );
  }

  /** Before the copy is read back: no executor, and no process of the sandbox user left to change it. */
  private async quiesce(): Promise<void> {
    await this.executor?.close().catch(() => {});
    this.executor = undefined;
    const result = await runInPod(
      this.target,
      asUser(this.settings.user, ["/bin/sh", "-c", "kill -KILL -1 2>/dev/null; true"]),
      {
        deadlineMs: 30_000,
      },
    ).catch((error: unknown) => {
      throw new SandboxError(`stopping the sandbox's processes failed: ${(error as Error).message}`, {
        containerId: this.target.pod,
        cause: error,
      });
    });
    if (result.exitCode !== 0) {
      throw await this.lostError(
        `stopping the sandbox's processes failed (${result.error ?? result.stderr.trim()})`,
      );
    }
  }

  /** An interactive TTY shell in the workspace, as the sandbox user; resolves with its exit code. */
  async shell(io: ShellIo): Promise<number> {
    await this.podEgress?.ensureMux(this.target, this.settings.user);
    return runPodShell(this.target, this.settings.user, this.workdir, io, this.podEgress?.env());
  }

  /**
   * Ends the run, once: the published ports' listeners and connections, the executor, then the pod
   * (and its copy) goes.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      await this.publisher?.close();
      await this.executor?.close().catch(() => {});
      this.podEgress?.closeMux();
      await this.release();
    } finally {
      await this.podEgress?.close();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/**
 * The workspace's kept pod for this session, reset and held (reuse), or none yet (create), or held by
 * another session (busy: this session's pod is its own and deleted at its end). A kept pod that
 * cannot be reset is deleted and a new one made.
 */
async function keptPodFor(
  cluster: Cluster,
  settings: PodSettings,
  options: KubernetesSandboxOptions,
): Promise<KeptPodLookup> {
  const say = (line: string) => options.onProgress?.(line);
  const kept = await takeKeptPod(cluster, settings, say);
  if (kept.kind === "busy") {
    say(
      `the workspace's kept pod is in use by another session (${kept.holder}): this session gets a pod of its own, deleted at its end`,
    );
  }
  if (kept.kind !== "reuse") return kept;
  const target: PodTarget = {
    kc: cluster.kc,
    namespace: cluster.namespace,
    pod: kept.pod,
    container: SANDBOX_CONTAINER,
  };
  try {
    await resetPod(target, settings);
    return kept;
  } catch (error) {
    say(`the workspace's kept pod ${kept.pod} is deleted, a new one made: ${(error as Error).message}`);
    await deletePod(cluster, kept.pod).catch(() => {});
    return { kind: "create" };
  }
}
