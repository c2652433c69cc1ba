/**
 * Which devcontainer.json fields harness leaves out, and why, in one line each. The file lives in
 * the workspace, which the sandbox can write: nothing in it may widen the sandbox, so every field
 * that would (privileges, mounts, host commands, extra engine flags) is named here and never applied.
 */

/** Fields that would weaken the sandbox or run something outside it: left out, with the reason. */
export const REFUSED_FIELDS: Readonly<Record<string, string>> = {
  privileged: "the sandbox never runs privileged",
  capAdd: "the sandbox's commands keep no capabilities",
  securityOpt: "harness's seccomp profile and no-new-privileges stay",
  runArgs: "extra docker run flags could undo any of the hardening",
  mounts: "only the workspace is mounted (other host paths stay out of reach)",
  workspaceMount: "harness mounts the workspace itself, with its protected paths read-only",
  workspaceFolder: "the workspace is always at /workspace",
  init: "harness runs its own PID 1",
  forwardPorts: "the sandbox has no network; use --publish PORT[:HOSTPORT] to reach a server in it",
  appPort: "the sandbox has no network; use --publish PORT[:HOSTPORT] to reach a server in it",
  features: "features install from registries and may add privileges, mounts or entrypoints",
  initializeCommand: "it would run on the host, outside any sandbox",
  onCreateCommand: "not supported (put it in postCreateCommand)",
  updateContentCommand: "not supported (put it in postCreateCommand)",
  postStartCommand: "not supported (only postCreateCommand runs)",
  postAttachCommand: "not supported (only postCreateCommand runs)",
  overrideCommand: "harness's own command keeps the container running",
  shutdownAction: "harness decides when the container stops",
  userEnvProbe: "the environment is containerEnv and remoteEnv only",
  updateRemoteUserUID: "commands run as remoteUser's uid as it is in the image",
  hostRequirements: "use --memory and --cpus",
  dockerComposeFile: "Compose setups are not supported (use image or build)",
  service: "Compose setups are not supported (use image or build)",
  runServices: "Compose setups are not supported (use image or build)",
};

/** `build` fields left out, and why. */
export const REFUSED_BUILD_FIELDS: Readonly<Record<string, string>> = {
  options: "extra docker build flags are not passed to the engine",
  cacheFrom: "no registry is reachable from the build",
};

/** Whether a field's value asks for anything: `privileged: false` or `capAdd: []` ask for nothing. */
export function asksForSomething(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}
