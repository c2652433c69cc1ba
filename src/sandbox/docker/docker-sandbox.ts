/**
 * `DockerSandbox`: the Sandbox interface on one hardened, long-lived container per workspace.
 * Anchor: testcontainers-node `docker-container-client.ts`.
 */
import { randomUUID } from "node:crypto";
import createDebug from "debug";
import type Docker from "dockerode";
import { SandboxError } from "../../errors.js";
import { protectedPathRefusal } from "../copy/apply-policy.js";
import {
  type ApplyResult,
  applyCopyChanges,
  copyLabels,
  createCopyContainer,
  exportCopyChanges,
  LABEL_ISOLATION,
  type WorkspaceChanges,
} from "../copy/copy-workspace.js";
import {
  DEFAULT_COPY_LIMIT_BYTES,
  planWorkspaceCopy,
  type WorkspaceCopyPlan,
} from "../copy/workspace-archive.js";
import {
  describeGitSurfaceChanges,
  type GitSurface,
  gitSurfaceChanges,
  scanGitSurface,
} from "../host/git-surface.js";
import { configNamedPaths, planProtectedMounts, verifyProtectedMounts } from "../host/protected-paths.js";
import { describeSetIdFiles, stripSetIdBits } from "../host/strip-set-id.js";
import { resolveWorkspace } from "../host/workspace.js";
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox.js";
import {
  type AcquireResult,
  acquireContainer,
  reviveContainer,
  waitUntilReady,
} from "./container-lifecycle.js";
import { configHash, containerCreateOptions, type SandboxSettings } from "./container-spec.js";
import { connectDocker } from "./docker-client.js";
import { dockerStatus } from "./docker-errors.js";
import { type ExecOutcome, runDockerExec, runSimpleExec } from "./docker-exec.js";
import { type DockerSandboxOptions, resolveSettings } from "./docker-sandbox-options.js";
import { endLeftoverProcesses } from "./end-of-run.js";
import { neverStarted, toExecResult } from "./exec-outcome.js";
import { HEALTH_SCRIPT } from "./exec-scripts.js";
import { ensureSandboxImage } from "./image.js";
import { runInteractiveShell, type ShellIo } from "./interactive-shell.js";
import { createLabels } from "./labels.js";
import { resolveSandboxUser } from "./sandbox-user.js";
import { stopContainersSharing } from "./workspace-quiesce.js";

const log = createDebug("harness:docker");

export type { DockerSandboxOptions };

/** Per-command timeout when neither the call nor the sandbox's options give one. */
const DEFAULT_TIMEOUT_MS = 120_000;

export class DockerSandbox implements Sandbox {
  readonly workdir: string;
  /** True until the first command ran, and again after a recovery: the next one starts in the workspace. */
  private fresh = true;
  /** Where the next command starts (the last one's final cwd). */
  private cwd: string;
  /** Bind mode: the git surface when the sandbox opened, compared with the one when it stops. */
  private gitBefore: GitSurface | undefined;
  private stopped = false;

  private constructor(
    private readonly docker: Docker,
    private container: Docker.Container,
    private readonly createOptions: Docker.ContainerCreateOptions & { Labels: Record<string, string> },
    private readonly settings: SandboxSettings,
    private readonly options: DockerSandboxOptions,
    /** How the container was obtained: "reused", "started" or "created". */
    readonly acquired: AcquireResult["how"],
    /** Copy mode's scan of the workspace at open; undefined in bind mode. */
    private readonly copyPlan: WorkspaceCopyPlan | undefined,
  ) {
    this.workdir = settings.workdir;
    this.cwd = settings.workdir;
  }

  get containerId(): string {
    return this.container.id;
  }

  /** The container's settings as resolved (image tag, real workspace path, user, limits), for reports. */
  get resolvedSettings(): Readonly<SandboxSettings> {
    return this.settings;
  }

  static async open(options: DockerSandboxOptions): Promise<DockerSandbox> {
    const { path: workspace, owner } = await resolveWorkspace(options.workspace);
    // Canonical "uid:gid", never root in any spelling: this is the only user string Docker gets.
    const user = resolveSandboxUser(workspace, owner, options.user);
    const docker = options.docker ?? (await connectDocker());
    // Copy mode scans (and checks the size limit) before anything is created, with no sandbox
    // process left running that could swap the tree under the scan.
    const copyPlan =
      options.isolation === "copy"
        ? await quiesceThen(docker, workspace, options.onProgress, () =>
            planWorkspaceCopy(workspace, options.copyLimitBytes ?? DEFAULT_COPY_LIMIT_BYTES),
          )
        : undefined;
    const image = options.image ?? (await ensureSandboxImage(docker, options.onProgress));
    const imageId = await docker
      .getImage(image)
      .inspect()
      .then((info) => info.Id)
      .catch((error: unknown) => {
        throw new SandboxError(`image '${image}' is not available locally: ${(error as Error).message}`, {
          cause: error,
        });
      });
    const settings = resolveSettings(options, {
      image,
      workspace,
      user,
      isolation: copyPlan ? "copy" : "bind",
      // Copy mode mounts nothing of the host; apply-policy.ts refuses to apply protected paths.
      protectedMounts: copyPlan
        ? []
        : await planProtectedMounts(workspace, owner, options.protect ?? {}, (line) =>
            options.onProgress?.(line),
          ),
    });
    const base = containerCreateOptions(settings);
    const createOptions = {
      ...base,
      Labels: copyPlan
        ? copyLabels(
            workspace,
            configHash({ ...base, Image: imageId, Labels: { [LABEL_ISOLATION]: "copy" } }),
            randomUUID(),
          )
        : createLabels(workspace, configHash({ ...base, Image: imageId }), randomUUID()),
    };
    const { container, how } = copyPlan
      ? {
          container: await createCopyContainer(docker, createOptions, copyPlan, user, settings.workdir),
          how: "created" as const,
        }
      : await acquireContainer(docker, workspace, createOptions);
    log("container %s %s for %s", container.id.slice(0, 12), how, workspace);
    try {
      // A running container that was reused already served commands; only new or restarted ones wait.
      if (how !== "reused") {
        await verifyProtectedMounts(workspace, settings.protectedMounts ?? []);
        await waitUntilReady(container, user);
      }
    } catch (error) {
      await container.remove({ force: true, v: true }).catch(() => {});
      throw error;
    }
    const finalOptions = copyPlan ? { ...options, removeOnStop: true } : options;
    // Bind mode: what git on the host could be made to run, as it is before the run (git-surface.ts).
    const gitBefore = copyPlan ? undefined : await scanGitSurface(workspace);
    const sandbox = new DockerSandbox(
      docker,
      container,
      createOptions,
      settings,
      finalOptions,
      how,
      copyPlan,
    );
    sandbox.gitBefore = gitBefore;
    return sandbox;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const notices: string[] = [];
    const timeoutMs = options.timeoutMs ?? this.options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    let attempt = await this.runOnce(command, options, timeoutMs);
    if (attempt === "not-started") {
      notices.push(await this.recover("the sandbox could not start the command"));
      attempt = await this.runOnce(command, options, timeoutMs);
      if (attempt === "not-started") {
        throw new SandboxError("the sandbox cannot run commands even after a restart", {
          containerId: this.container.id,
        });
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
  private async runOnce(
    command: string,
    options: ExecOptions,
    timeoutMs: number,
  ): Promise<{ outcome: ExecOutcome; startCwd: string } | "not-started"> {
    // The start directory is kept here, never in the container, where the command could rewrite it.
    const startCwd = this.fresh ? this.workdir : this.cwd;
    let outcome: ExecOutcome;
    try {
      outcome = await runDockerExec(this.container, {
        command,
        user: this.settings.user,
        workdir: this.workdir,
        startDir: startCwd,
        timeoutMs,
        signal: options.signal,
        onOutput: options.onOutput,
        headBytes: this.options.outputHeadBytes ?? 8 * 1024,
        tailBytes: this.options.outputTailBytes ?? 16 * 1024,
        killGraceSeconds: this.options.killGraceSeconds ?? 2,
      });
    } catch (error) {
      log("exec failed to start: %s", (error as Error).message);
      return "not-started";
    }
    if (neverStarted(outcome)) return "not-started";
    this.fresh = false;
    return { outcome, startCwd };
  }

  private async checkHealth(): Promise<"ok" | string> {
    const state = await this.container.inspect().catch(() => undefined);
    if (!state?.State.Running) return "the sandbox container stopped during the command";
    try {
      await runSimpleExec(this.container, ["/bin/sh", "-c", HEALTH_SCRIPT], this.settings.user);
      return "ok";
    } catch {
      return "the sandbox's process limit is exhausted (a fork bomb?) or it cannot start processes";
    }
  }

  /** Restarts, starts or recreates the container and says so, for the model. */
  private async recover(why: string): Promise<string> {
    const done = await reviveContainer(this.container);
    if (done === "gone" && this.copyPlan) {
      throw new SandboxError(
        "the copy-mode sandbox container is gone, and its copy of the workspace with it",
        {
          containerId: this.container.id,
        },
      );
    }
    if (done === "gone") {
      const { container } = await acquireContainer(this.docker, this.settings.workspace, this.createOptions);
      this.container = container;
    }
    const action = done === "gone" ? "recreated (it was gone)" : done;
    try {
      // Every start mounts the bind sources again as they are now: check them as open() does.
      await verifyProtectedMounts(
        this.settings.workspace,
        this.settings.protectedMounts ?? [],
        `before the sandbox container was ${action}; it was removed`,
      );
    } catch (error) {
      await this.container.remove({ force: true, v: true }).catch(() => {});
      throw error;
    }
    await waitUntilReady(this.container, this.settings.user);
    this.fresh = true;
    this.options.onProgress?.(`sandbox ${action}: ${why}`);
    return `${why}; the sandbox container was ${action}, so every process in it was stopped and the working directory is back to ${this.workdir}.`;
  }

  /** An interactive TTY shell in the workspace, as the sandbox user; resolves with its exit code. */
  async shell(io: ShellIo): Promise<number> {
    return runInteractiveShell(this.container, this.settings.user, this.workdir, io);
  }

  /** "copy" when the workspace was copied in (`--isolation copy`), else "bind". */
  get isolation(): "bind" | "copy" {
    return this.copyPlan ? "copy" : "bind";
  }

  /**
   * Copy mode: what the sandbox changed in its copy, compared with the host workspace now. Stops the
   * container first, so nothing still running in it can change the copy after it was reviewed.
   */
  async exportChanges(): Promise<WorkspaceChanges> {
    if (!this.copyPlan) throw new SandboxError("exportChanges() needs isolation 'copy'");
    await stopSharingContainers(this.docker, this.settings.workspace, this.options.onProgress);
    return exportCopyChanges(this.container, this.copyPlan, this.workdir);
  }

  /** Copy mode: writes reviewed changes to the host workspace; refused paths are in the result. */
  async applyChanges(changes: WorkspaceChanges): Promise<ApplyResult> {
    if (!this.copyPlan) throw new SandboxError("applyChanges() needs isolation 'copy'");
    // The host's .git/config may name a hooks directory or an included config in the work tree.
    const named = (await configNamedPaths(this.settings.workspace)).map((p) => p.path);
    const protect = this.options.protect ?? {};
    const refusePath = protectedPathRefusal({
      ...protect,
      extraPaths: [...(protect.extraPaths ?? []), ...named],
    });
    await stopSharingContainers(this.docker, this.settings.workspace, this.options.onProgress);
    return applyCopyChanges(this.container, this.copyPlan, this.workdir, changes, refusePath);
  }

  /**
   * Ends the run. Bind mode: every process the run left in the container is ended (nothing of the
   * sandbox keeps running, and so writing the workspace, while harness is not watching), then the
   * workspace is checked for what the host would run later. Copy mode, and `removeOnStop`: the
   * container is removed.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.options.removeOnStop) {
      // v: the anonymous volume of copy mode goes with the container.
      await this.container.remove({ force: true, v: true }).catch((error: unknown) => {
        if (dockerStatus(error) !== 404) throw error;
      });
    } else if (!this.copyPlan) {
      await endLeftoverProcesses(this.container, this.settings.user);
    }
    if (this.gitBefore) {
      const changes = gitSurfaceChanges(this.gitBefore, await scanGitSurface(this.settings.workspace));
      for (const line of describeGitSurfaceChanges(this.settings.workspace, changes))
        this.options.onProgress?.(line);
    }
    // Bind mode: no setuid/setgid file is left in the host's workspace (strip-set-id.ts).
    if (!this.copyPlan) {
      for (const line of describeSetIdFiles(await stripSetIdBits(this.settings.workspace)))
        this.options.onProgress?.(line);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** Stops the bind-mode sandboxes sharing the workspace (workspace-quiesce.ts) and says so. */
async function stopSharingContainers(
  docker: Docker,
  workspace: string,
  onProgress: ((line: string) => void) | undefined,
): Promise<void> {
  for (const name of await stopContainersSharing(docker, workspace)) {
    onProgress?.(
      `stopped ${name}, a bind-mode sandbox of this workspace, so nothing in it runs while copy mode reads or writes the workspace`,
    );
  }
}

async function quiesceThen<T>(
  docker: Docker,
  workspace: string,
  onProgress: ((line: string) => void) | undefined,
  then: () => Promise<T>,
): Promise<T> {
  await stopSharingContainers(docker, workspace, onProgress);
  return then();
}
