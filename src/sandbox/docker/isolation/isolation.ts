/**
 * How the workspace reaches the container, chosen once when the sandbox opens: mounted
 * (bind-isolation.ts) or copied in (../copy/copy-isolation.ts). `DockerSandbox` runs commands the
 * same way for both; everything that differs between the two lives behind this interface.
 */

import type Docker from "dockerode";
import type { ProtectedMount } from "../../host/git/protected-paths.js";
import type { CopiedWorkspace } from "../../sandbox.js";
import type { IsolationKind } from "../../sandbox-request.js";
import type { AcquireResult } from "../container/container-lifecycle.js";

/** A create request with its labels, as the engine gets it. */
export type LabelledCreateOptions = Docker.ContainerCreateOptions & { Labels: Record<string, string> };

export interface Isolation {
  readonly kind: IsolationKind;
  /** Workspace paths mounted again, read-only or pinned, over the workspace (bind only). */
  readonly protectedMounts: readonly ProtectedMount[];
  /** Copy isolation's changes; undefined for bind. */
  readonly copy: CopiedWorkspace | undefined;
  /** The labels the container is created with (`configHash` of the rest goes into them). */
  labels(create: Docker.ContainerCreateOptions, imageId: string): Record<string, string>;
  /** A running container with these options: reused, started or created (bind), always new (copy). */
  acquire(create: LabelledCreateOptions): Promise<AcquireResult>;
  /** After every start of the container (Docker mounts bind sources again then): check what it mounted. */
  verifyStarted(when?: string): Promise<void>;
  /** Once the sandbox is ready, before its first command. */
  begin(): Promise<void>;
  /**
   * The container vanished during the run: a new one (bind), or a SandboxError (copy: the copy went
   * with it).
   */
  replaceGone(create: LabelledCreateOptions): Promise<Docker.Container>;
  /** The open failed after `acquire`: remove what it made (nothing of a run is in it yet). */
  abandon(container: Docker.Container): Promise<void>;
  /** The end of the run; called once. */
  end(container: Docker.Container, facts?: EndFacts): Promise<void>;
}

/** What the sandbox knows about the container when the run ends. */
export interface EndFacts {
  /** Another live harness process still uses it: ending its processes is left to the last one out. */
  othersAttached: boolean;
  /** The executor saw nothing running but PID 1 and its sleep: no leftovers to look for. */
  nothingLeft: boolean;
}
