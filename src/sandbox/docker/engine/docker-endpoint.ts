/**
 * Which engine harness talks to, resolved the way the docker CLI resolves it (docker/cli
 * `cli/command/cli.go` resolveContextName): `--context`, then DOCKER_HOST (which beats DOCKER_CONTEXT,
 * as in the docker CLI), then DOCKER_CONTEXT, then `currentContext` in the docker config; the
 * "default" context is DOCKER_HOST or the local socket. A named context is read from the docker
 * CLI's context store: `contexts/meta/<sha256 of name>/meta.json` and `contexts/tls/<sha256>/docker/`.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../../../errors.js";

export const DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock";

/** Client TLS material for a tcp:// engine. */
export interface EndpointTls {
  /** PEM bytes; absent ones fall back to Node's defaults (system CAs; no client certificate). */
  ca?: Buffer | undefined;
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
  /** False with a context's SkipTLSVerify: the server's certificate is not checked. */
  verify: boolean;
}

export interface DockerEndpoint {
  /** unix://, tcp:// or ssh:// URL of the engine. */
  host: string;
  /** Where the endpoint came from, for messages: "DOCKER_HOST", "context 'NAME' (--context)"… */
  source: string;
  /** tcp:// with TLS; undefined for plain tcp://, unix:// and ssh://. */
  tls?: EndpointTls | undefined;
  /**
   * The engine is (or may be) on another machine: anything but unix:// and npipe://. Host paths
   * mean nothing there, so bind mounts and the allowlist gateway's socket cannot work.
   */
  remote: boolean;
}

/** The docker CLI's config directory: DOCKER_CONFIG, else ~/.docker (HOME from `env`). */
function dockerConfigDir(env: NodeJS.ProcessEnv): string {
  return env["DOCKER_CONFIG"] || join(env["HOME"] || homedir(), ".docker");
}

function contextName(env: NodeJS.ProcessEnv, flag: string | undefined): { name: string; source: string } {
  if (flag) return { name: flag, source: `context '${flag}' (--context)` };
  if (env["DOCKER_HOST"]) return { name: "default", source: "DOCKER_HOST" };
  const fromEnv = env["DOCKER_CONTEXT"];
  if (fromEnv) return { name: fromEnv, source: `context '${fromEnv}' (DOCKER_CONTEXT)` };
  const configFile = join(dockerConfigDir(env), "config.json");
  if (existsSync(configFile)) {
    let current: unknown;
    try {
      current = (JSON.parse(readFileSync(configFile, "utf8")) as { currentContext?: unknown }).currentContext;
    } catch (error) {
      throw new ConfigError(`${configFile} is not valid JSON: ${(error as Error).message}`, { cause: error });
    }
    if (typeof current === "string" && current !== "")
      return { name: current, source: `context '${current}' (${configFile})` };
  }
  return { name: "default", source: "the default socket" };
}

/** tcp:// from DOCKER_HOST: TLS when DOCKER_TLS_VERIFY or DOCKER_TLS is set, as the docker CLI does. */
function envTls(env: NodeJS.ProcessEnv): EndpointTls | undefined {
  const verify = Boolean(env["DOCKER_TLS_VERIFY"]);
  if (!verify && !env["DOCKER_TLS"]) return undefined;
  const dir = env["DOCKER_CERT_PATH"] || dockerConfigDir(env);
  const read = (file: string): Buffer | undefined =>
    existsSync(join(dir, file)) ? readFileSync(join(dir, file)) : undefined;
  return { ca: read("ca.pem"), cert: read("cert.pem"), key: read("key.pem"), verify };
}

function namedContext(env: NodeJS.ProcessEnv, name: string, source: string): DockerEndpoint {
  const digest = createHash("sha256").update(name).digest("hex");
  const contexts = join(dockerConfigDir(env), "contexts");
  const metaFile = join(contexts, "meta", digest, "meta.json");
  if (!existsSync(metaFile))
    throw new ConfigError(
      `${source}: no such Docker context (no ${metaFile}); 'docker context ls' lists them`,
    );
  let docker: { Host?: unknown; SkipTLSVerify?: unknown } | undefined;
  try {
    const meta = JSON.parse(readFileSync(metaFile, "utf8")) as {
      Endpoints?: { docker?: { Host?: unknown; SkipTLSVerify?: unknown } };
    };
    docker = meta.Endpoints?.docker;
  } catch (error) {
    throw new ConfigError(`${source}: ${metaFile} is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (typeof docker?.Host !== "string" || docker.Host === "")
    throw new ConfigError(`${source}: ${metaFile} names no Endpoints.docker.Host`);
  const tlsDir = join(contexts, "tls", digest, "docker");
  const read = (file: string): Buffer | undefined =>
    existsSync(join(tlsDir, file)) ? readFileSync(join(tlsDir, file)) : undefined;
  const files = { ca: read("ca.pem"), cert: read("cert.pem"), key: read("key.pem") };
  const skip = docker.SkipTLSVerify === true;
  const hasTls = files.ca !== undefined || files.cert !== undefined || skip;
  const host = docker.Host;
  return {
    host,
    source,
    tls: host.startsWith("tcp://") && hasTls ? { ...files, verify: !skip } : undefined,
    remote: isRemote(host),
  };
}

export function isRemote(host: string): boolean {
  return !host.startsWith("unix://") && !host.startsWith("npipe://");
}

/** The engine `env` and the `--context` flag name, with its TLS material read. */
export function resolveDockerEndpoint(
  env: NodeJS.ProcessEnv = process.env,
  context?: string,
): DockerEndpoint {
  const { name, source } = contextName(env, context);
  if (name !== "default") return namedContext(env, name, source);
  const host = env["DOCKER_HOST"] || DEFAULT_DOCKER_HOST;
  return {
    host,
    source,
    tls: host.startsWith("tcp://") ? envTls(env) : undefined,
    remote: isRemote(host),
  };
}
