/**
 * Bind isolation: the workspace is mounted at the workdir, with what the host runs later mounted
 * again read-only over it (host/protected-paths.ts). One long-lived container per workspace, found
 * again by its labels. A run ends by ending every process it left behind, then checking the
 * workspace for what the host would run or trust later: git's files (host/git-surface.ts, moved
 * aside by host/git-aside.ts) and set-id bits (host/strip-set-id.ts).
 */
import { randomUUID } from "node:crypto";
import type Docker from "dockerode";
import { describeGitAside, moveGitSurfaceAside } from "../../host/git/git-aside.js";
import { type GitSurface, gitSurfaceChanges, scanGitSurface } from "../../host/git/git-surface.js";
import {
  type ProtectedMount,
  planProtectedMounts,
  verifyProtectedMounts,
} from "../../host/git/protected-paths.js";
import { describeSetIdFiles, stripSetIdBits } from "../../host/strip-set-id.js";
import type { ProtectOptions } from "../../sandbox-request.js";
import { acquireContainer } from "../container/container-lifecycle.js";
import { configHash } from "../container/container-spec.js";
import { createLabels } from "../container/labels.js";
import { removeContainer } from "../container/remove-container.js";
import { removeAbandonedForeign } from "./abandoned-foreign.js";
import { describeSurvivors, endLeftoverProcesses } from "./end-of-run.js";
import type { EndFacts, Isolation, LabelledCreateOptions } from "./isolation.js";
import { ownerLabels } from "./labels/copy-container-labels.js";

export interface BindIsolationOptions {
  protect?: ProtectOptions | undefined;
  /** Remove the container at the end instead of leaving it for the next run. */
  removeOnStop?: boolean | undefined;
  /**
   * The image is not harness's own (own-image.ts): PID 1 and its child are the image's binaries,
   * so the container never outlives the run (the last harness process out removes it), and nothing
   * of the image is left running to write the workspace after its check.
   */
  foreignImage?: boolean | undefined;
  /** Where harness's state (the leases) is found: the engine's environment, as for the lease taken. */
  dockerEnv?: NodeJS.ProcessEnv | undefined;
  onProgress?: ((line: string) => void) | undefined;
}

export class BindIsolation implements Isolation {
  readonly kind = "bind";
  readonly copy = undefined;
  /** The git surface when the run began, compared with the one when it ends. */
  private gitBefore: GitSurface | undefined;

  private constructor(
    private readonly docker: Docker,
    private readonly workspace: string,
    /** "uid:gid" the sandbox runs as: ends the leftover processes as that user. */
    private readonly user: string,
    readonly protectedMounts: readonly ProtectedMount[],
    private readonly options: BindIsolationOptions,
  ) {}

  /** Plans the protective mounts of `workspace` (a real path); `owner` owns what harness creates. */
  static async prepare(
    docker: Docker,
    workspace: string,
    owner: string,
    user: string,
    options: BindIsolationOptions,
  ): Promise<BindIsolation> {
    const mounts = await planProtectedMounts(workspace, owner, options.protect ?? {}, (line) =>
      options.onProgress?.(line),
    );
    return new BindIsolation(docker, workspace, user, mounts, options);
  }

  labels(create: Docker.ContainerCreateOptions, imageId: string): Record<string, string> {
    const labels = createLabels(this.workspace, configHash({ ...create, Image: imageId }), randomUUID());
    // Who made it, so that a next open can tell one whose harness was killed (abandoned-foreign.ts).
    return this.options.foreignImage ? { ...labels, ...ownerLabels() } : labels;
  }

  async acquire(create: LabelledCreateOptions) {
    if (this.options.foreignImage)
      await removeAbandonedForeign(this.docker, this.workspace, this.options.dockerEnv);
    return acquireContainer(this.docker, this.workspace, create);
  }

  verifyStarted(when?: string): Promise<void> {
    return verifyProtectedMounts(this.workspace, this.protectedMounts, when);
  }

  async begin(): Promise<void> {
    this.gitBefore = await scanGitSurface(this.workspace);
  }

  async replaceGone(create: LabelledCreateOptions): Promise<Docker.Container> {
    return (await this.acquire(create)).container;
  }

  async abandon(container: Docker.Container): Promise<void> {
    await removeContainer(container);
  }

  async end(container: Docker.Container, facts?: EndFacts): Promise<void> {
    const say = (line: string) => this.options.onProgress?.(line);
    if (this.options.removeOnStop || (this.options.foreignImage && !facts?.othersAttached)) {
      // Removed before the workspace is checked: after the check nothing of it runs any more.
      await removeContainer(container);
    } else if (!facts?.othersAttached && !facts?.nothingLeft) {
      // Nothing of the sandbox keeps running, and so writing the workspace, while harness is not
      // watching. While another harness process uses the container, its commands are not leftovers:
      // the last process out ends what is left.
      const survivors = await endLeftoverProcesses(container, this.user);
      if (survivors.length > 0) say(describeSurvivors(survivors));
    }
    if (this.gitBefore) {
      const changes = gitSurfaceChanges(this.gitBefore, await scanGitSurface(this.workspace));
      const aside = await moveGitSurfaceAside(this.workspace, changes);
      for (const line of describeGitAside(this.workspace, aside)) say(line);
    }
    for (const line of describeSetIdFiles(await stripSetIdBits(this.workspace))) say(line);
  }
}
