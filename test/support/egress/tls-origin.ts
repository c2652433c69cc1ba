/**
 * An HTTPS origin with a self-signed certificate for one name, made at test time with openssl. The
 * gateway only tunnels (CONNECT, no TLS interception), so the client verifies this certificate
 * against the name it asked for: the end-to-end TLS is the client's and the origin's alone.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Origin, reply, startOrigin } from "./origin-server.js";

/** The body of every answer. */
export const TLS_FIXTURE_BODY = "harness tls fixture ok\n";

export interface TlsOrigin extends Origin {
  /** The certificate (PEM), for `curl --cacert`. */
  readonly certPem: string;
  /** `https://<hostname>:<port>/`. */
  readonly url: string;
}

function selfSigned(hostname: string): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "harness-tls-origin-"));
  try {
    const key = join(dir, "key.pem");
    const cert = join(dir, "cert.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        `/CN=${hostname}`,
        "-addext",
        `subjectAltName=DNS:${hostname}`,
        "-keyout",
        key,
        "-out",
        cert,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    return { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts the origin on 127.0.0.1:0 with a certificate for `hostname`. */
export async function startTlsOrigin(hostname: string): Promise<TlsOrigin> {
  const tls = selfSigned(hostname);
  const origin = await startOrigin(
    (_request, response) => reply(response, TLS_FIXTURE_BODY, "text/plain"),
    tls,
  );
  return { ...origin, certPem: tls.cert, url: `https://${hostname}:${origin.port}/` };
}
