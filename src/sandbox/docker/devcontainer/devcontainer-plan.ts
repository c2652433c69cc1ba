/**
 * What `--devcontainer` changes in a sandbox's plan (container-plan.ts): the image (built, or named
 * and already on the engine), the user commands run as (remoteUser's, which must be the workspace
 * owner's uid, unless root or `--user` is given), and a label that ties the container to the
 * post-create command and environment it was made for. Nothing else of devcontainer.json reaches the container's create request.
 */
import { createHash } from "node:crypto";
import type Docker from "dockerode";
import { ConfigError } from "../../../errors.js";
import type { DevcontainerRequest } from "../../sandbox-request.js";
import { parseUserIds } from "../../sandbox-user.js";
import type { EngineKind } from "../engine/engine-kind.js";
import { ensureDevcontainerImage } from "./devcontainer-image.js";
import { resolveImageUser } from "./image-user.js";

/**
 * Records which devcontainer setup (post-create command, environment, file) the container was
 * created with. It is part of the config hash, so a changed setup makes a new container, whose
 * post-create command then runs; the same setup reuses the container without running it again.
 */
export const LABEL_DEVCONTAINER = "dev.harness.devcontainer";

/**
 * The devcontainer's image, or undefined without one (harness's own image then). A `build` only on
 * Docker: Podman's API builds (4.3, compat and libpod endpoints alike) run RUN steps in the host's
 * network namespace whatever network mode is asked, so a workspace's Dockerfile would reach the
 * host's loopback services and the network from the host.
 */
export async function devcontainerImage(
  docker: Docker,
  dev: DevcontainerRequest | undefined,
  owner: string,
  engine: EngineKind,
  onProgress?: (line: string) => void,
): Promise<string | undefined> {
  if (dev?.build !== undefined && engine === "podman") {
    throw new ConfigError(
      `devcontainer.json: 'build' is refused on Podman, whose API builds run RUN steps on the host's network whatever the network mode: build the image yourself (podman build --network none) and name it in 'image'`,
    );
  }
  if (dev?.build !== undefined) return ensureDevcontainerImage(docker, dev.build, owner, onProgress);
  return dev?.image;
}

/**
 * remoteUser/containerUser's "uid:gid" in `image`, or undefined (said why) to keep the default
 * user. One identity per workspace: a user whose uid is not the workspace owner's is refused in one
 * line, as any other uid would find every write to the workspace refused ("Permission denied") and
 * use that uid's package cache, shared with its own workspaces.
 */
export async function devcontainerUser(
  docker: Docker,
  image: string,
  dev: DevcontainerRequest,
  workspace: string,
  owner: string,
  onProgress?: (line: string) => void,
): Promise<string | undefined> {
  if (dev.user === undefined) return undefined;
  const resolved = await resolveImageUser(docker, image, dev.user);
  if (!resolved.ok) {
    onProgress?.(
      `devcontainer.json: remoteUser ignored: ${resolved.reason}; commands run as the workspace owner`,
    );
    return undefined;
  }
  refuseOtherUid(dev.user, parseUserIds(resolved.user).uid, workspace, owner);
  return resolved.user;
}

/**
 * Throws when remoteUser's `uid` is neither root (ignored later, with a line) nor the workspace
 * owner's. container-plan.ts checks a numeric remoteUser this way before anything is built.
 */
export function refuseOtherUid(name: string, uid: number, workspace: string, owner: string): void {
  const ownerUid = parseUserIds(owner).uid;
  if (uid === 0 || uid === ownerUid) return;
  const which = String(uid) === name ? `uid ${uid}` : `'${name}' (uid ${uid} in the image)`;
  throw new ConfigError(
    `devcontainer.json: remoteUser ${which} is not the workspace's owner (uid ${ownerUid} owns ${workspace}), and commands run as the owner only (as uid ${uid}, every write to the workspace would fail with "Permission denied"): leave remoteUser out, name the image's user with uid ${ownerUid}, or chown the workspace to ${uid}`,
  );
}

/** The label (empty without a devcontainer). */
export function devcontainerLabels(dev: DevcontainerRequest | undefined): Record<string, string> {
  if (dev === undefined) return {};
  const setup = JSON.stringify({ file: dev.file, env: dev.env, post: dev.postCreateCommand ?? null });
  return { [LABEL_DEVCONTAINER]: createHash("sha256").update(setup).digest("hex").slice(0, 16) };
}
