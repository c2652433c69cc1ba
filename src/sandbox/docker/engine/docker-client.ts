/** Connecting to the Docker engine, with a failure the CLI can print as one line. */
import { Agent as HttpsAgent } from "node:https";
import Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { type DockerEndpoint, resolveDockerEndpoint } from "./docker-endpoint.js";
import { type EngineVersionInfo, rememberVersion } from "./engine-kind.js";

/** A connected engine client and where it points. */
export interface DockerEngine {
  docker: Docker;
  endpoint: DockerEndpoint;
}

/** Client options for a unix:// or tcp:// endpoint. */
function clientOptions(endpoint: DockerEndpoint): Docker.DockerOptions {
  if (endpoint.host.startsWith("unix://"))
    return { socketPath: endpoint.host.slice(7) || "/var/run/docker.sock" };
  const url = new URL(endpoint.host);
  if (url.protocol !== "tcp:")
    throw new SandboxError(
      `${endpoint.source}: ${endpoint.host}: harness connects over unix:// and tcp:// only`,
    );
  const tls = endpoint.tls;
  if (!tls) return { host: url.hostname, port: url.port || "2375", protocol: "http" };
  // An agent of our own carries the TLS settings: docker-modem has no option for SkipTLSVerify.
  const agent = new HttpsAgent({
    keepAlive: true,
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
    rejectUnauthorized: tls.verify,
  });
  // docker-modem passes `agent` on to every request; @types/dockerode does not list it.
  const options: Docker.DockerOptions & { agent: HttpsAgent } = {
    host: url.hostname,
    port: url.port || "2376",
    protocol: "https",
    agent,
  };
  return options;
}

/**
 * ssh://: HTTP over `ssh HOST docker system dial-stdio` (ssh-dial-agent.ts, loaded only here), as
 * the docker CLI does; docker-modem's own ssh transport needs ssh2, which the bundle leaves out
 * (it costs start-up time on every call; see scripts/build.mjs).
 */
async function sshClientOptions(
  endpoint: DockerEndpoint,
  env: NodeJS.ProcessEnv,
): Promise<Docker.DockerOptions> {
  const { SshDialAgent } = await import("./ssh-dial-agent.js");
  let agent: InstanceType<typeof SshDialAgent>;
  try {
    agent = new SshDialAgent(endpoint.host, env);
  } catch (error) {
    throw new SandboxError(`${endpoint.source}: ${(error as Error).message}`, { cause: error });
  }
  // The host name only fills the request line: the agent's connection is the ssh process.
  const options: Docker.DockerOptions & { agent: typeof agent } = {
    host: "docker",
    port: 80,
    protocol: "http",
    agent,
  };
  return options;
}

/** What to check first when the ping failed, by transport. */
function unreachableHint(endpoint: DockerEndpoint): string {
  if (endpoint.tls)
    return " Check the TLS files (ca.pem, cert.pem, key.pem): the engine must accept the client certificate.";
  if (endpoint.host.startsWith("ssh://"))
    return " Check that 'ssh HOST docker system dial-stdio' works without a prompt (a key in ssh-agent or ~/.ssh/config, a known host key, docker on the remote PATH).";
  return "";
}

/**
 * A client for the engine `env` and `context` name (docker-endpoint.ts: `--context`, DOCKER_HOST,
 * DOCKER_CONTEXT, the docker config's current context), checked with a GET /version.
 */
export async function connectEngine(
  env: NodeJS.ProcessEnv = process.env,
  context?: string,
): Promise<DockerEngine> {
  const endpoint = resolveDockerEndpoint(env, context);
  const docker = new Docker(
    endpoint.host.startsWith("ssh://") ? await sshClientOptions(endpoint, env) : clientOptions(endpoint),
  );
  try {
    // GET /version rather than /_ping: as good a check, and the engine's kind comes with it, so
    // opening a sandbox asks one round trip fewer (engine-kind.ts).
    rememberVersion(docker, (await docker.version()) as EngineVersionInfo);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new SandboxError(
      `Docker is not reachable at ${endpoint.host} from ${endpoint.source} (${reason}).${unreachableHint(endpoint)} Start the engine (e.g. 'sudo systemctl start docker', or 'dockerd &' as root) or point DOCKER_HOST at it.`,
      { cause: error },
    );
  }
  return { docker, endpoint };
}

/** A client for the engine as `connectEngine` resolves it, checked with a ping. */
export async function connectDocker(env: NodeJS.ProcessEnv = process.env, context?: string): Promise<Docker> {
  return (await connectEngine(env, context)).docker;
}
