/**
 * What a sandbox's container will be, decided before it is created: the workspace and its owner,
 * the user, the engine, the isolation, the image, and from those the create request. `DockerSandbox.open`
 * and the batch's warm pool (warm/warm-container.ts) both go through here, so a container made ahead
 * of its task has the very request (and config hash) the task's own open computes.
 */
import type Docker from "dockerode";
import { SandboxError } from "../../errors.js";
import { resolveWorkspace } from "../host/workspace.js";
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";
import { resolveSandboxUser } from "../sandbox-user.js";
import { containerCreateOptions, type SandboxSettings } from "./container/container-spec.js";
import { ensureSandboxImage } from "./container/image.js";
import { machineryImage, ownImageTag } from "./container/own-image.js";
import { podmanSeccompProfilePath } from "./container/podman-seccomp.js";
import {
  devcontainerImage,
  devcontainerLabels,
  devcontainerUser,
  refuseOtherUid,
} from "./devcontainer/devcontainer-plan.js";
import { type DockerSandboxOptions, resolveSettings } from "./docker-sandbox-options.js";
import { connectEngine, type DockerEngine } from "./engine/docker-client.js";
import { type EngineKind, type EngineSettings, engineSettings } from "./engine/engine-kind.js";
import { isolationForEngine } from "./engine/remote-engine.js";
import { checkRuntime } from "./engine/runtime-check.js";
import { dockerStatus } from "./exec/docker-errors.js";
import { BindIsolation } from "./isolation/bind-isolation.js";
import { CopyIsolation } from "./isolation/copy-isolation.js";
import type { Isolation, LabelledCreateOptions } from "./isolation/isolation.js";
import { openPackageCache, type PackageCache } from "./package-cache/package-cache.js";

export interface ContainerPlan {
  docker: Docker;
  /** The workspace's real path. */
  workspace: string;
  /** Canonical "uid:gid", never root. */
  user: string;
  engineKind: EngineSettings;
  isolation: Isolation;
  image: string;
  imageId: string;
  /**
   * The image is not one harness built from its own sandbox/ (own-image.ts): the machinery runs as
   * the commands' uid in it, and the run's end removes the container with everything of the image.
   */
  foreignImage: boolean;
  /** The package cache to mount (its keeper may still be pruning it); undefined without one. */
  packageCache: PackageCache | undefined;
}

/**
 * Plans the container `options` ask for. With `only: "bind"` (the warm pool), resolves undefined
 * instead of preparing a copy isolation, whose copy is taken when the task starts.
 */
export async function planContainer(options: DockerSandboxOptions): Promise<ContainerPlan>;
export async function planContainer(
  options: DockerSandboxOptions,
  only: "bind",
): Promise<ContainerPlan | undefined>;
export async function planContainer(
  options: DockerSandboxOptions,
  only?: "bind",
): Promise<ContainerPlan | undefined> {
  const { path: workspace, owner } = await resolveWorkspace(options.workspace);
  const dev = options.devcontainer;
  // devcontainer.json's remoteUser is looked up in its image, once that is known; `--user` wins.
  const devUser = options.user === undefined && dev?.user !== undefined;
  // Canonical "uid:gid", never root in any spelling: this is the only user string Docker gets.
  let user = devUser ? undefined : resolveSandboxUser(workspace, owner, options.user);
  // A numeric remoteUser of another uid is refused before anything is built (a name, once looked up).
  if (devUser && dev?.user !== undefined && /^[0-9]+$/.test(dev.user))
    refuseOtherUid(dev.user, Number(dev.user), workspace, owner);
  const engine = options.docker ? undefined : await connectEngine(options.dockerEnv, options.dockerContext);
  const docker = options.docker ?? (engine as DockerEngine).docker;
  // A remote engine cannot mount this machine's workspace: copy isolation (remote-engine.ts).
  const isolationKind = engine ? isolationForEngine(options, engine.endpoint) : (options.isolation ?? "bind");
  if (only !== undefined && isolationKind !== only) return undefined;
  if (options.runtime)
    await checkRuntime(docker, options.runtime, options.network ?? SANDBOX_DEFAULTS.network);
  // Before anything is built or created: an engine harness refuses (a rootless Podman that cannot
  // apply the limits) is refused first.
  const engineKind = await engineSettings(docker, podmanSeccompProfilePath);
  const image =
    options.image ??
    (await devcontainerImage(docker, dev, owner, engineKind.kind, options.onProgress)) ??
    (await ensureSandboxImage(docker, options.onProgress));
  // Before anything uses it (remoteUser's lookup, the package cache's keeper): one line if it is missing.
  const imageId = await imageIdOf(docker, image, engineKind.kind, {
    fromDevcontainer: options.image === undefined && dev?.image !== undefined,
  });
  if (user === undefined) {
    const fromImage =
      dev === undefined
        ? undefined
        : await devcontainerUser(docker, image, dev, workspace, owner, options.onProgress);
    user = fromImage ?? resolveSandboxUser(workspace, owner, undefined);
  }
  const workdir = options.workdir ?? SANDBOX_DEFAULTS.workdir;
  const foreignImage = (await ownImageTag(docker, imageId)) === undefined;
  const isolation: Isolation =
    isolationKind === "copy"
      ? await CopyIsolation.prepare(docker, workspace, user, workdir, {
          copyLimitBytes: options.copyLimitBytes ?? SANDBOX_DEFAULTS.copyLimitBytes,
          copyMaxFiles: options.copyMaxFiles ?? SANDBOX_DEFAULTS.copyMaxFiles,
          protect: options.protect,
          keep: options.keepCopy,
          onProgress: options.onProgress,
        })
      : await BindIsolation.prepare(docker, workspace, owner, user, { ...options, foreignImage });
  const packageCache =
    options.packageCache === undefined
      ? undefined
      : await openPackageCache(
          docker,
          // The keeper runs as root: never in an image harness did not build.
          await machineryImage(docker, image, imageId, options.onProgress),
          user,
          options.packageCache.maxBytes,
          workspace,
          options.onProgress,
        );
  return { docker, workspace, user, engineKind, isolation, image, imageId, foreignImage, packageCache };
}

/** The container's settings and create request (labels included) for `plan`. */
export function containerRequest(
  plan: ContainerPlan,
  options: DockerSandboxOptions,
  egressSocketDir?: string,
): { settings: SandboxSettings; createOptions: LabelledCreateOptions } {
  const { isolation } = plan;
  const settings = resolveSettings(options, {
    image: plan.image,
    workspace: plan.workspace,
    user: plan.user,
    isolation: isolation.kind,
    protectedMounts: isolation.protectedMounts,
    egressSocketDir,
    packageCacheVolume: plan.packageCache?.volume,
    foreignImage: plan.foreignImage,
  });
  const devLabels = devcontainerLabels(options.devcontainer);
  // The devcontainer's label goes into the config hash too: another setup, another container.
  const base = {
    ...containerCreateOptions(settings, plan.engineKind),
    ...(Object.keys(devLabels).length === 0 ? {} : { Labels: devLabels }),
  };
  const labels = { ...isolation.labels(base, plan.imageId), ...devLabels };
  return { settings, createOptions: { ...base, Labels: labels } };
}

/**
 * The image's id. An image the engine does not have is refused in one line that names it once and
 * says how to get it: harness never pulls (an image is code that runs on the host's engine).
 */
async function imageIdOf(
  docker: Docker,
  image: string,
  engine: EngineKind,
  options: { fromDevcontainer: boolean },
): Promise<string> {
  try {
    return (await docker.getImage(image).inspect()).Id;
  } catch (error) {
    if (dockerStatus(error) !== 404) {
      throw new SandboxError(`inspecting image '${image}' failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const whose = options.fromDevcontainer ? "devcontainer.json's image" : "image";
    const other = options.fromDevcontainer
      ? "or give devcontainer.json a 'build'"
      : "or pass another --image";
    throw new SandboxError(
      `${whose} '${image}' is not on the engine, and harness never pulls: get it with \`${engine} pull ${image}\` (or build it), ${other}`,
      { cause: error },
    );
  }
}
