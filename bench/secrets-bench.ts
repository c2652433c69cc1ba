/**
 * Secrets benchmark: what ending TLS at the gateway (a host with a `--secret` or an
 * `--allow-request` rule) adds to one HTTPS request, against the blind CONNECT tunnel every other
 * host gets. On loopback, from the host: each request is a fresh CONNECT, a TLS handshake with the
 * gateway (terminated: the run CA's leaf) or with the origin (blind), and one GET; when terminated,
 * the gateway also makes its own TLS connection to the origin and swaps the placeholder.
 * Then the body: a download of BENCH_SECRETS_MB megabytes of JSON-like text through each path, since
 * a secret's host has its responses scanned for every form of the value.
 * A report, not a test: no assertions on timings, only that every request got the origin's answer.
 *   npm run bench:secrets   (env: BENCH_SECRETS_REQUESTS=100, BENCH_SECRETS_MB=32)
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext, type SecureContext, connect as tlsConnect } from "node:tls";
import { EgressGateway } from "../src/sandbox/egress/egress-gateway.js";
import { RunCertificateAuthority } from "../src/sandbox/egress/secrets/run-ca.js";
import { SecretValue } from "../src/sandbox/egress/secrets/secret-grant.js";
import { envInt, formatTable, ms, ratio, type Summary, summarize } from "./stats.js";

const REQUESTS = envInt("BENCH_SECRETS_REQUESTS", 100);
const MEGABYTES = envInt("BENCH_SECRETS_MB", 32);
const BLIND = "blind.example.org";
const SECRET = "secret.example.org";
const VALUE = "bench-real-token";

const originCa = new RunCertificateAuthority();
let seenValue = 0;
/** A megabyte of text shaped like an API's JSON: letters, digits, quotes, escapes, base64-ish runs. */
const MEGABYTE = Buffer.from(
  Array.from(
    { length: 16_384 },
    (_, i) => `{"id":${i},"name":"item-${i}","blob":"QmVuY2ggZGF0YQ==\\u00e9","ok":true},\n`,
  )
    .join("")
    .slice(0, 1024 * 1024),
);
const server = createServer({ SNICallback: (name, done) => done(null, contextFor(name)) }, (req, res) => {
  if (req.headers.authorization === `Bearer ${VALUE}`) seenValue += 1;
  if (req.url !== "/big") {
    res.end("ok");
    return;
  }
  let sent = 0;
  const more = (): void => {
    while (sent < MEGABYTES) {
      sent += 1;
      if (!res.write(MEGABYTE)) {
        res.once("drain", more);
        return;
      }
    }
    res.end();
  };
  more();
});
const contexts = new Map<string, SecureContext>();
function contextFor(name: string): SecureContext {
  let context = contexts.get(name);
  if (context === undefined) {
    const leaf = originCa.leafFor(name);
    context = createSecureContext({ cert: leaf.certPem, key: leaf.keyPem });
    contexts.set(name, context);
  }
  return context;
}
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as { port: number }).port;

const dir = mkdtempSync(join(tmpdir(), "harness-secrets-bench-"));
const gateway = await EgressGateway.start({
  socketDir: join(dir, "gw"),
  allowHosts: [`${BLIND}:${port}`],
  secrets: [
    { name: "TOKEN", host: `${SECRET}:${port}`, inBody: false, value: new SecretValue("TOKEN", VALUE) },
  ],
  upstreamCa: [originCa.certPem],
  allowPrivate: true,
  limitBytes: 1024 ** 3,
  maxConnections: 64,
  idleMs: 30_000,
  maxConnectionMs: 60_000,
  lookup: async () => [{ address: "127.0.0.1", family: 4 }],
});
const placeholder = gateway.secretEnv()[0]?.split("=")[1] ?? "";
const runCa = readFileSync(join(dir, "gw", gateway.trustFiles?.ca ?? ""), "utf8");

/** One fresh CONNECT + TLS + GET through the gateway; resolves with the milliseconds it took. */
async function once(host: string, ca: string): Promise<number> {
  const start = performance.now();
  const raw = connect(gateway.socketPath);
  await new Promise((resolve, reject) => raw.once("connect", resolve).once("error", reject));
  raw.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
  await new Promise((resolve) => raw.once("data", resolve));
  const secure = tlsConnect({ socket: raw, servername: host, ca });
  await new Promise((resolve, reject) => secure.once("secureConnect", resolve).once("error", reject));
  secure.write(
    `GET / HTTP/1.1\r\nHost: ${host}:${port}\r\nAuthorization: Bearer ${placeholder}\r\nConnection: close\r\n\r\n`,
  );
  let text = "";
  secure.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  await new Promise((resolve) => secure.once("close", resolve));
  if (!text.startsWith("HTTP/1.1 200") || !/\r\n\r\n(2\r\n)?ok/.test(text))
    throw new Error(`unexpected answer: ${text}`);
  return performance.now() - start;
}

/** One download of MEGABYTES through the gateway; resolves with the milliseconds it took. */
async function download(host: string, ca: string): Promise<number> {
  const start = performance.now();
  const raw = connect(gateway.socketPath);
  await new Promise((resolve, reject) => raw.once("connect", resolve).once("error", reject));
  raw.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`);
  await new Promise((resolve) => raw.once("data", resolve));
  const secure = tlsConnect({ socket: raw, servername: host, ca });
  await new Promise((resolve, reject) => secure.once("secureConnect", resolve).once("error", reject));
  secure.write(`GET /big HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: close\r\n\r\n`);
  let bytes = 0;
  secure.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
  });
  await new Promise((resolve) => secure.once("close", resolve));
  if (bytes < MEGABYTES * MEGABYTE.length) throw new Error(`short download: ${bytes} bytes`);
  return performance.now() - start;
}

/**
 * MB/s of wall time (median of 3), and CPU milliseconds per MB for this whole process (client,
 * gateway and origin alike): the second holds up better on a machine busy with other work.
 */
async function throughput(host: string, ca: string): Promise<{ rate: number; cpuPerMb: number }> {
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < 3; i += 1) times.push(await download(host, ca));
  const used = process.cpuUsage(cpu);
  return {
    rate: (MEGABYTES * 1000) / summarize(times).medianMs,
    cpuPerMb: (used.user + used.system) / 1000 / (3 * MEGABYTES),
  };
}

async function series(host: string, ca: string): Promise<Summary> {
  for (let i = 0; i < 5; i += 1) await once(host, ca);
  const samples: number[] = [];
  for (let i = 0; i < REQUESTS; i += 1) samples.push(await once(host, ca));
  return summarize(samples);
}

try {
  const blind = await series(BLIND, originCa.certPem);
  const before = seenValue;
  const terminated = await series(SECRET, runCa);
  if (seenValue - before !== REQUESTS + 5)
    throw new Error("the origin did not get the value on every request");
  const row = (name: string, s: Summary): string[] => [
    name,
    ms(s.medianMs),
    ms(s.p90Ms),
    ms(s.minMs),
    ms(s.maxMs),
    `${ratio(s.medianMs, blind.medianMs)}x`,
  ];
  process.stdout.write(
    `secrets bench: ${REQUESTS} fresh HTTPS requests each (CONNECT + handshake + GET), on loopback\n`,
  );
  process.stdout.write(
    formatTable(
      ["path", "median", "p90", "min", "max", "vs blind"],
      [row("blind CONNECT tunnel", blind), row("TLS ended at the gateway, placeholder swapped", terminated)],
    ),
  );
  process.stdout.write(`\nadded per request (median): ${ms(terminated.medianMs - blind.medianMs)}\n`);
  const blindRate = await throughput(BLIND, originCa.certPem);
  const maskedRate = await throughput(SECRET, runCa);
  process.stdout.write(
    `\n${MEGABYTES} MB download (median of 3): blind ${blindRate.rate.toFixed(0)} MB/s ` +
      `(${blindRate.cpuPerMb.toFixed(1)} CPU ms/MB), secret's host (masked) ${maskedRate.rate.toFixed(0)} MB/s ` +
      `(${maskedRate.cpuPerMb.toFixed(1)} CPU ms/MB)\n`,
  );
} finally {
  await gateway.close();
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
