/**
 * A stand-in for a remote Docker engine behind TLS: a Node `tls` server on 127.0.0.1:PORT that
 * requires a client certificate and pipes each connection to the local engine's Unix socket.
 * Certificates (a CA, a server certificate for IP 127.0.0.1, a client certificate; and a client
 * certificate from another CA) are made with openssl when the fixture starts. The engine is the same
 * machine, but harness only sees tcp:// + TLS, as with an engine on another host.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Server, type TLSSocket } from "node:tls";

export interface TlsEngine {
  /** tcp://127.0.0.1:PORT */
  host: string;
  /** DOCKER_CERT_PATH with ca.pem, cert.pem, key.pem the engine accepts. */
  certPath: string;
  /** A DOCKER_CERT_PATH whose client certificate comes from a CA the engine does not trust. */
  wrongCertPath: string;
  /** A DOCKER_CERT_PATH with only ca.pem: no client certificate. */
  noClientCertPath: string;
  /** Env that points harness (and docker-modem) at this engine. */
  env: NodeJS.ProcessEnv;
  /** Drops every open connection and stops listening, as when the remote machine goes away. */
  drop(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
}

/** An EC key and a certificate for `cn`, signed by `ca` (or self-signed when `ca` is undefined). */
function certificate(dir: string, name: string, cn: string, ca: string | undefined, ext: string): void {
  openssl(dir, "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}-key.pem`);
  if (ca === undefined) {
    openssl(
      dir,
      "req",
      "-x509",
      "-new",
      "-key",
      `${name}-key.pem`,
      "-out",
      `${name}.pem`,
      "-days",
      "2",
      "-subj",
      `/CN=${cn}`,
    );
    return;
  }
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, "req", "-new", "-key", `${name}-key.pem`, "-out", `${name}.csr`, "-subj", `/CN=${cn}`);
  openssl(
    dir,
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}-key.pem`,
    "-CAcreateserial",
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  );
}

function certDir(root: string, name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir);
  for (const [to, from] of Object.entries(files))
    writeFileSync(join(dir, to), readFileSync(join(root, from)));
  return dir;
}

/** The local engine's socket: DOCKER_HOST's unix:// path, else the default. */
function localSocket(): string {
  const host = process.env["DOCKER_HOST"];
  return host?.startsWith("unix://") ? host.slice(7) : "/var/run/docker.sock";
}

export async function startTlsEngine(): Promise<TlsEngine> {
  const root = mkdtempSync(join(tmpdir(), "harness-tls-engine-"));
  certificate(root, "ca", "harness test CA", undefined, "");
  certificate(
    root,
    "server",
    "127.0.0.1",
    "ca",
    "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
  );
  certificate(root, "client", "harness test client", "ca", "extendedKeyUsage=clientAuth\n");
  certificate(root, "other-ca", "another CA", undefined, "");
  certificate(root, "other", "untrusted client", "other-ca", "extendedKeyUsage=clientAuth\n");
  const certPath = certDir(root, "client-certs", {
    "ca.pem": "ca.pem",
    "cert.pem": "client.pem",
    "key.pem": "client-key.pem",
  });
  const wrongCertPath = certDir(root, "wrong-certs", {
    "ca.pem": "ca.pem",
    "cert.pem": "other.pem",
    "key.pem": "other-key.pem",
  });
  const noClientCertPath = certDir(root, "no-client-cert", { "ca.pem": "ca.pem" });

  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server: Server = createServer(
    {
      key: readFileSync(join(root, "server-key.pem")),
      cert: readFileSync(join(root, "server.pem")),
      ca: readFileSync(join(root, "ca.pem")),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (client: TLSSocket) => {
      const engine = connect(localSocket());
      track(client);
      track(engine);
      client.pipe(engine);
      engine.pipe(client);
      client.on("close", () => engine.destroy());
      engine.on("close", () => client.destroy());
    },
  );
  server.on("tlsClientError", () => {});
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        const address = server.address();
        resolve(typeof address === "object" && address ? address.port : port);
      });
    });
  const port = await listen(0);
  const host = `tcp://127.0.0.1:${port}`;
  const stop = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    host,
    certPath,
    wrongCertPath,
    noClientCertPath,
    env: { DOCKER_HOST: host, DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: certPath },
    drop: stop,
    restore: async () => {
      await listen(port);
    },
    close: async () => {
      if (server.listening) await stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
