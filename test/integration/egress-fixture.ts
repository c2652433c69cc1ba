/**
 * What the allowlist-mode sandbox tests share: origin servers on the host's loopback that count
 * what reaches them, a resolver that maps documentation names to loopback (no test ever asks real
 * DNS), and the records a sandbox's gateway emits.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll } from "vitest";
import type { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import type { EgressRecord } from "../../src/sandbox/sandbox.js";

/** A documentation name the injected resolver maps to 127.0.0.1. */
export const ORIGIN = "origin.example.org";

/** Resolves `*.example.org`, `*.example.com` and `*.test` to loopback; anything else does not exist. */
export async function loopbackLookup(hostname: string): Promise<Array<{ address: string; family: number }>> {
  if (/(^|\.)(example\.(org|com)|test)$/i.test(hostname)) return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
}

/** Resolves every name to a private address (10.0.0.1): for the refusal without allowPrivate. */
export async function privateLookup(): Promise<Array<{ address: string; family: number }>> {
  return [{ address: "10.0.0.1", family: 4 }];
}

export interface Origin extends AsyncDisposable {
  port: number;
  /** TCP connections accepted so far. */
  connections: number;
  /** Request paths served so far. */
  paths: string[];
}

function listenOn(server: HttpServer, origin: Origin): Promise<Origin> {
  server.on("connection", () => {
    origin.connections += 1;
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      origin.port = (server.address() as { port: number }).port;
      resolve(origin);
    });
  });
}

function originOf(server: HttpServer): Origin {
  const origin: Origin = {
    port: 0,
    connections: 0,
    paths: [],
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on("request", (request, response) => {
    origin.paths.push(request.url ?? "");
    response.end(`origin-ok ${request.url}`);
  });
  return origin;
}

/** A plain HTTP origin on 127.0.0.1 that answers `origin-ok <path>`. */
export function startOrigin(): Promise<Origin> {
  const server = createHttpServer();
  return listenOn(server, originOf(server));
}

/** The same over TLS, with a self-signed certificate for ORIGIN made now. */
export function startTlsOrigin(): Promise<Origin> {
  const dir = mkdtempSync(join(tmpdir(), "harness-tls-"));
  try {
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", `/CN=${ORIGIN}`].concat([
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ]),
      { stdio: "ignore" },
    );
    const server = createHttpsServer({
      key: readFileSync(join(dir, "key.pem")),
      cert: readFileSync(join(dir, "cert.pem")),
    });
    return listenOn(server, originOf(server));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every record the sandbox's gateway emits from now on. */
export function collectRecords(sandbox: DockerSandbox): EgressRecord[] {
  const records: EgressRecord[] = [];
  const monitor = sandbox.egress;
  if (monitor === undefined) throw new Error("the sandbox has no gateway");
  monitor.subscribe((record) => records.push(record));
  return records;
}

/** Waits until `check` passes (records arrive when a connection ends, a moment after the command). */
export async function eventually(check: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A python3 GET through the proxy variables (urllib reads them): prints `STATUS <code>` and the body,
 * or `ERROR <what>`. `ssl._create_unverified_context()` because the test origin's certificate is
 * self-signed; the tunnel is what is tested.
 */
export function pythonGet(url: string): string {
  return `python3 - '${url}' <<'EOF'
import ssl, sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=15, context=ssl._create_unverified_context())
    print("STATUS", r.status); print(r.read().decode())
except urllib.error.HTTPError as e:
    print("STATUS", e.code); print(e.read().decode())
except Exception as e:
    print("ERROR", type(e).__name__, e)
EOF`;
}

/**
 * An image like debian:bookworm-slim (which here is built with python3) without python3, made once
 * by committing a container that removed it.
 */
export async function imageWithoutPython(base = "debian:bookworm-slim"): Promise<string> {
  const docker = new Docker();
  const tag = "harness-test-no-python:1";
  if (
    await docker
      .getImage(tag)
      .inspect()
      .then(
        () => true,
        () => false,
      )
  )
    return tag;
  const container = await docker.createContainer({
    Image: base,
    Cmd: ["/bin/sh", "-c", "rm -f /usr/bin/python3* /usr/local/bin/python3*"],
    User: "0",
    NetworkDisabled: true,
    HostConfig: { NetworkMode: "none" },
  });
  try {
    await container.start();
    await container.wait();
    await container.commit({ repo: "harness-test-no-python", tag: "1" });
  } finally {
    await container.remove({ force: true });
  }
  return tag;
}

/** A private state directory for the gateway sockets, as `XDG_STATE_HOME`, removed at dispose. */
export function privateStateHome(): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), "harness-state-"));
  const before = process.env["XDG_STATE_HOME"];
  process.env["XDG_STATE_HOME"] = path;
  return {
    path,
    [Symbol.dispose]() {
      if (before === undefined) delete process.env["XDG_STATE_HOME"];
      else process.env["XDG_STATE_HOME"] = before;
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/** The origins and the private state home a test file shares, started before its tests. */
export interface SharedOrigins {
  /** Plain HTTP. */
  readonly origin: Origin;
  /** HTTPS with a self-signed certificate. */
  readonly tlsOrigin: Origin;
}

/**
 * Call inside a `describe`: a private XDG_STATE_HOME (gateway sockets and transcripts go there) and
 * both origins, for every test of the block; all of it closed after the last one.
 */
export function useOrigins(): SharedOrigins {
  let state: ReturnType<typeof privateStateHome> | undefined;
  let origins: { origin: Origin; tlsOrigin: Origin } | undefined;
  beforeAll(async () => {
    state = privateStateHome();
    origins = { origin: await startOrigin(), tlsOrigin: await startTlsOrigin() };
  });
  afterAll(async () => {
    await origins?.origin[Symbol.asyncDispose]();
    await origins?.tlsOrigin[Symbol.asyncDispose]();
    state?.[Symbol.dispose]();
  });
  const started = () => {
    if (origins === undefined)
      throw new Error("useOrigins(): the origins run only inside the describe's tests");
    return origins;
  };
  return {
    get origin() {
      return started().origin;
    },
    get tlsOrigin() {
      return started().tlsOrigin;
    },
  };
}
