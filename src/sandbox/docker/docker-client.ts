/** Connecting to the Docker engine, with a failure the CLI can print as one line. */
import Docker from "dockerode";
import { SandboxError } from "../../errors.js";

/** Where dockerode will connect: DOCKER_HOST if set, else the default socket. */
export function dockerEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return env["DOCKER_HOST"] || "unix:///var/run/docker.sock";
}

/** A client for the engine at DOCKER_HOST or the default socket, checked with a ping. */
export async function connectDocker(env: NodeJS.ProcessEnv = process.env): Promise<Docker> {
  if (dockerEndpoint(env).startsWith("ssh://")) {
    // The bundle leaves out ssh2 (it costs start-up time on every call; see scripts/build.mjs).
    throw new SandboxError(
      `DOCKER_HOST=${dockerEndpoint(env)}: ssh:// is not supported; forward the remote socket (ssh -L) and use unix:// or tcp://`,
    );
  }
  const docker = new Docker();
  try {
    await docker.ping();
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new SandboxError(
      `Docker is not reachable at ${dockerEndpoint(env)} (${reason}). Start the engine (e.g. 'sudo systemctl start docker', or 'dockerd &' as root) or point DOCKER_HOST at it.`,
      { cause: error },
    );
  }
  return docker;
}
