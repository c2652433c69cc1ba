/**
 * Allowlist mode on the Kubernetes engine, on the cluster in HARNESS_TEST_KUBECONFIG: the pod keeps
 * no interface but lo; its proxy connections go over the mux's exec to the gateway on the host,
 * which reaches origin servers on the host's loopback (documentation names mapped to loopback).
 */
import { createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { RunCertificateAuthority } from "../../src/sandbox/egress/secrets/run-ca.js";
import { SecretValue } from "../../src/sandbox/egress/secrets/secret-grant.js";
import {
  KubernetesSandbox,
  type KubernetesSandboxOptions,
} from "../../src/sandbox/kubernetes/kubernetes-sandbox.js";
import type { EgressRecord, Sandbox } from "../../src/sandbox/sandbox.js";
import { startEchoOrigin } from "../support/egress/echo-origin.js";
import { recoverValue } from "../support/egress/value-oracle.js";
import { skipKubernetes, TEST_NAMESPACE, testKubeconfig } from "../support/kubernetes-available.js";
import { makeWorkspace } from "../support/workspace.js";
import { eventually, loopbackLookup, ORIGIN, type Origin, pythonGet, useOrigins } from "./egress-fixture.js";

const API = "api.example.org";
const API_VALUE = "api-REAL-token-k8s-5d2e";

function records(sandbox: Sandbox): EgressRecord[] {
  const seen: EgressRecord[] = [];
  sandbox.egress?.subscribe((record) => seen.push(record));
  return seen;
}

describe.skipIf(skipKubernetes)(
  "allowlist mode on Kubernetes (over the exec stream)",
  { timeout: 180_000 },
  () => {
    const shared = useOrigins();
    let origin: Origin;
    let tlsOrigin: Origin;
    beforeAll(() => {
      ({ origin, tlsOrigin } = shared);
    });

    const open = (workspace: string, more: Partial<KubernetesSandboxOptions> = {}) =>
      KubernetesSandbox.open({
        workspace,
        kubeconfig: testKubeconfig,
        namespace: TEST_NAMESPACE,
        egress: {
          allowHosts: [`${ORIGIN}:${origin.port}`, `${ORIGIN}:${tlsOrigin.port}`],
          allowPrivate: true,
        },
        egressLookup: loopbackLookup,
        ...more,
      });

    it("an allowed page through the mux and the gateway, recorded with the call's id; still only lo", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      expect(sandbox.description.network).toBe("allowlist");
      const seen = records(sandbox);
      const result = await sandbox.exec(
        `ls /sys/class/net; ${pythonGet(`http://${ORIGIN}:${origin.port}/plain`)}`,
        {
          callId: "toolu_k8s",
        },
      );
      expect(result.stdout).toBe("lo\nSTATUS 200\norigin-ok /plain\n");
      expect(result.egressDenied).toEqual([]);
      await eventually(() => seen.length > 0);
      expect(seen[0]).toMatchObject({
        callId: "toolu_k8s",
        host: ORIGIN,
        port: origin.port,
        allowed: true,
        status: 200,
      });
    });

    it("tunnels HTTPS with CONNECT; a connection around the proxy has no route", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      const script = `${pythonGet(`https://${ORIGIN}:${tlsOrigin.port}/secure`)}
python3 -c "import ssl; print(ssl.get_server_certificate(('${ORIGIN}', ${tlsOrigin.port})))" >/dev/null 2>&1 && echo DIRECT || echo NO-DIRECT`;
      const result = await sandbox.exec(script);
      expect(result.stdout).toBe("STATUS 200\norigin-ok /secure\nNO-DIRECT\n");
    });

    it("a host off the allowlist is refused by the gateway, and the result says so", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      const result = await sandbox.exec(pythonGet(`http://elsewhere.example.com:${origin.port}/nope`));
      expect(result.stdout).toMatch(/^STATUS 403/);
      expect(result.egressDenied).toEqual([
        expect.objectContaining({ host: "elsewhere.example.com", port: origin.port }),
      ]);
    });

    it("a command cannot end the mux (kill -9 -1): the next command still reaches the origin", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      await sandbox.exec("kill -9 -1; true");
      const after = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/after-kill`));
      expect(after.notices).toEqual([]);
      expect(after.stdout).toBe("STATUS 200\norigin-ok /after-kill\n");
    });

    it("a megabyte each way through the mux's credit", async () => {
      // An origin of its own: it reads the whole body, and answers its length and a megabyte.
      const server = createServer((request, response) => {
        let up = 0;
        request.on("data", (chunk: Buffer) => {
          up += chunk.length;
        });
        request.on("end", () => response.end(`${up}\n${"y".repeat(1024 * 1024)}`));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as AddressInfo).port;
      try {
        using ws = makeWorkspace();
        await using sandbox = await open(ws.path, {
          egress: { allowHosts: [`${ORIGIN}:${port}`], allowPrivate: true },
        });
        const script = `python3 - <<'EOF'
import urllib.request
body = b"x" * (1024 * 1024)
r = urllib.request.urlopen(urllib.request.Request("http://${ORIGIN}:${port}/up", data=body), timeout=60)
data = r.read()
print(r.status, data.split(b"\\n", 1)[0].decode(), len(data.split(b"\\n", 1)[1]))
EOF`;
        const result = await sandbox.exec(script, { timeoutMs: 90_000 });
        expect(result.stderr).toBe("");
        expect(result.stdout).toBe(`200 ${1024 * 1024} ${1024 * 1024}\n`);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  },
);

describe.skipIf(skipKubernetes)(
  "--secret on Kubernetes: the value never enters the pod",
  { timeout: 180_000 },
  () => {
    it("a placeholder in the pod, the real value only on the way to its host (TLS ended with the run's CA)", async () => {
      const testCa = new RunCertificateAuthority();
      const leaf = testCa.leafFor(API);
      const seen: string[] = [];
      const server = createHttpsServer({ cert: leaf.certPem, key: leaf.keyPem }, (request, response) => {
        seen.push(request.headers.authorization ?? "");
        response.end("api-ok\n");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as AddressInfo).port;
      try {
        using ws = makeWorkspace();
        await using sandbox = await KubernetesSandbox.open({
          workspace: ws.path,
          kubeconfig: testKubeconfig,
          namespace: TEST_NAMESPACE,
          egress: {
            allowHosts: [],
            allowPrivate: true,
            secrets: [
              {
                name: "API_TOKEN",
                host: `${API}:${port}`,
                inBody: false,
                value: new SecretValue("API_TOKEN", API_VALUE),
              },
            ],
          },
          egressLookup: loopbackLookup,
          egressUpstreamCa: [testCa.certPem],
        });
        // python's ssl reads SSL_CERT_FILE: the bundle harness put into the pod.
        const script = `python3 - <<'PY'
import os, urllib.request
req = urllib.request.Request("https://${API}:${port}/v1", headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
print(urllib.request.urlopen(req, timeout=30).read().decode(), end="")
PY
env | grep -c '${API_VALUE}' || true`;
        const result = await sandbox.exec(script);
        expect(result.stderr).toBe("");
        expect(result.stdout).toBe("api-ok\n0\n");
        expect(seen).toEqual([`Bearer ${API_VALUE}`]);
        expect(`${result.stdout}${result.stderr}`).not.toContain(API_VALUE);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });

    it("finding 8: an origin echoing Basic credentials hands the pod the placeholder, in no form the value", async () => {
      const testCa = new RunCertificateAuthority();
      const leaf = testCa.leafFor(API);
      const echo = await startEchoOrigin({ cert: leaf.certPem, key: leaf.keyPem });
      try {
        using ws = makeWorkspace();
        await using sandbox = await KubernetesSandbox.open({
          workspace: ws.path,
          kubeconfig: testKubeconfig,
          namespace: TEST_NAMESPACE,
          egress: {
            allowHosts: [],
            allowPrivate: true,
            secrets: [
              {
                name: "API_TOKEN",
                host: `${API}:${echo.port}`,
                inBody: false,
                value: new SecretValue("API_TOKEN", API_VALUE),
              },
            ],
          },
          egressLookup: loopbackLookup,
          egressUpstreamCa: [testCa.certPem],
        });
        // git's own spelling of URL credentials, echoed raw, base64-encoded, and under a gzip transfer coding.
        const script = `python3 - <<'PY'
import base64, os, urllib.request
auth = "Basic " + base64.b64encode(("x-access-token:" + os.environ["API_TOKEN"]).encode()).decode()
for form in ["raw", "b64", "b64-lead1", "hex", "json-u", "te-gzip", "ce-gzip"]:
    req = urllib.request.Request("https://${API}:${echo.port}/form/" + form, headers={"Authorization": auth})
    try:
        print(form, urllib.request.urlopen(req, timeout=30).read().decode("latin1"))
    except Exception as e:
        print(form, "ERROR", e)
PY`;
        const result = await sandbox.exec(script);
        expect(result.stdout).toContain("raw Basic ");
        const sent = echo.seen.map((s) => s.headers.join("\n"));
        expect(
          sent.every((h) => h.includes(Buffer.from(`x-access-token:${API_VALUE}`).toString("base64"))),
        ).toBe(true);
        expect(recoverValue(`${result.stdout}\n${result.stderr}`, API_VALUE), result.stdout).toBe(undefined);
      } finally {
        await echo.close();
      }
    });
  },
);
