import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { connect, createServer } from "node:tls";
import { describe, expect, it } from "vitest";
import { RunCertificateAuthority } from "../../../../../src/sandbox/egress/secrets/run-ca.js";

describe("RunCertificateAuthority", () => {
  const ca = new RunCertificateAuthority();

  it("makes a CA certificate that Node and openssl read as a CA", () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    const text = execFileSync("openssl", ["x509", "-noout", "-text"], { input: ca.certPem }).toString();
    expect(text).toContain("CA:TRUE");
    expect(text).toContain("Certificate Sign");
  });

  it("signs a leaf for a name and for an IP literal, with the SAN, verified by the CA", () => {
    for (const host of ["registry.example.org", "203.0.113.7", "2001:db8::1"]) {
      const leaf = new X509Certificate(ca.leafFor(host).certPem);
      expect(leaf.ca).toBe(false);
      expect(leaf.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
      expect(leaf.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
      expect(leaf.checkHost(host) ?? leaf.checkIP(host)).toBeDefined();
    }
    expect(ca.leafFor("registry.example.org")).toBe(ca.leafFor("registry.example.org"));
  });

  it("passes openssl verify with strict X.509 checks", () => {
    const dir = execFileSync("mktemp", ["-d"]).toString().trim();
    execFileSync("sh", ["-c", `cat > ${dir}/ca.pem`], { input: ca.certPem });
    const out = execFileSync(
      "openssl",
      ["verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", `${dir}/ca.pem`],
      {
        input: ca.leafFor("git.example.org").certPem,
      },
    ).toString();
    execFileSync("rm", ["-rf", dir]);
    expect(out.trim()).toBe("stdin: OK");
  });

  it("is accepted by a TLS client that trusts only the CA", async () => {
    const leaf = ca.leafFor("api.example.org");
    const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => socket.end("hello"));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as { port: number };
    try {
      const client = connect({ host: "127.0.0.1", port, servername: "api.example.org", ca: ca.certPem });
      const chunks: Buffer[] = [];
      client.on("data", (chunk: Buffer) => chunks.push(chunk));
      await once(client, "end");
      expect(client.authorized).toBe(true);
      expect(Buffer.concat(chunks).toString()).toBe("hello");
      const wrong = connect({ host: "127.0.0.1", port, servername: "other.example.org", ca: ca.certPem });
      const [error] = (await once(wrong, "error")) as [NodeJS.ErrnoException];
      expect(error.code).toBe("ERR_TLS_CERT_ALTNAME_INVALID");
    } finally {
      server.close();
    }
  });
});
