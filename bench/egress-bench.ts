/**
 * Egress benchmark (allowlist mode): what harness's gateway adds to an HTTPS request, and what it
 * holds in memory under parallel downloads. Everything on loopback, in one run:
 *   1. from the host: a fresh HTTPS request straight to the origin vs the same request through the
 *      gateway's Unix socket (CONNECT, then TLS inside the tunnel);
 *   2. from the sandbox: the same python3 loop run on the host straight to the origin vs inside a
 *      `--network none` sandbox through the relay and the gateway (what a tool call sees);
 *   3. the gateway alone in a child process under 20 parallel downloads of 50 MB: its maxRSS.
 * A report, not a test: no assertions on timings, only on correctness (status, byte counts).
 *   npm run bench   (env: BENCH_EGRESS_REQUESTS=40 BENCH_EGRESS_PARALLEL=20 BENCH_EGRESS_MB=50)
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { EgressGateway } from "../src/sandbox/egress/egress-gateway.js";
import { SANDBOX_DEFAULTS } from "../src/sandbox/sandbox-request.js";
import { envInt, formatTable, ms, ratio, type Summary, summarize } from "./stats.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const REQUESTS = envInt("BENCH_EGRESS_REQUESTS", 40);
const PARALLEL = envInt("BENCH_EGRESS_PARALLEL", 20);
const DOWNLOAD_BYTES = envInt("BENCH_EGRESS_MB", 50) * 1024 ** 2;
/** A documentation name: the gateway's resolver maps it to the loopback origin; nothing else resolves. */
const ORIGIN = "origin.example.org";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "harness-egress-bench-")));
const children: ChildProcess[] = [];
function cleanup(): void {
  for (const child of children) child.kill();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Starts a bench child and returns it with its first stdout line: `node --import tsx FILE`, or, with
 * `bundled`, plain `node` on an esbuild bundle of it, so its memory is not tsx's (about 30 MB).
 */
async function startChild(
  file: string,
  args: string[],
  bundled = false,
): Promise<{ child: ChildProcess; first: string }> {
  const source = join(ROOT, "bench", file);
  let entry = ["--import", "tsx", source];
  if (bundled) {
    const outfile = join(dir, file.replace(/\.ts$/, ".mjs"));
    await build({
      entryPoints: [source],
      outfile,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      banner: {
        js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
      logLevel: "warning",
    });
    entry = [outfile];
  }
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`egress-bench: ${file} exited ${code} before starting`)));
  });
  return { child, first };
}

function lastLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    child.once("exit", () => resolve(out.trim().split("\n").at(-1) ?? ""));
  });
}

/** One fresh HTTPS GET straight to the origin; resolves with the body's length. */
function direct(port: number, ca: Buffer, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: "127.0.0.1", port, path, servername: ORIGIN, ca, agent: false, headers: { host: ORIGIN } },
      (res) => countBody(res, resolve),
    );
    req.on("error", reject);
    req.end();
  });
}

/** Counts a response's body bytes and hands the total to `done` at its end. */
function countBody(res: NodeJS.ReadableStream, done: (bytes: number) => void): void {
  let n = 0;
  res.on("data", (c: Buffer) => {
    n += c.length;
  });
  res.on("end", () => done(n));
}

/** The same request through the gateway: CONNECT over its Unix socket, then TLS in the tunnel. */
function viaGateway(socketPath: string, port: number, ca: Buffer, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const raw = connect(socketPath);
    raw.once("error", reject);
    raw.write(`CONNECT ${ORIGIN}:${port} HTTP/1.1\r\nHost: ${ORIGIN}:${port}\r\n\r\n`);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      raw.off("data", onData);
      if (!head.subarray(0, end).toString("latin1").startsWith("HTTP/1.1 200")) {
        reject(new Error(`egress-bench: CONNECT refused: ${head.subarray(0, end).toString("latin1")}`));
        raw.destroy();
        return;
      }
      const req = httpsRequest(
        {
          host: ORIGIN,
          port,
          path,
          ca,
          // No agent: with one, Node would ignore createConnection and look the name up itself.
          createConnection: () => tlsConnect({ socket: raw, servername: ORIGIN, ca }),
        },
        (res) => countBody(res, resolve),
      );
      req.on("error", reject);
      req.end();
    };
    raw.on("data", onData);
  });
}

/** Fresh-connection HTTPS requests in a python3 loop; prints a JSON list of per-request ms. */
const PY_LOOP = `
import json, ssl, sys, time, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
ctx = ssl.create_default_context(cafile=sys.argv[3])
times = []
for _ in range(n):
    t = time.perf_counter()
    with urllib.request.urlopen(url, context=ctx) as r:
        r.read()
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps(times))
`;

let exitCode = 0;
try {
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-keyout",
      key,
      "-out",
      cert,
      "-subj",
      `/CN=${ORIGIN}`,
      "-addext",
      `subjectAltName=DNS:${ORIGIN},IP:127.0.0.1`,
    ],
    { stdio: "ignore" },
  );
  const ca = readFileSync(cert);
  const origin = await startChild("egress-origin-child.ts", [cert, key]);
  const port = Number(origin.first);
  console.log(`egress-bench: node ${process.version}, HTTPS origin on 127.0.0.1:${port} (as ${ORIGIN})\n`);

  // 1: host-side, interleaved, fresh connection each time.
  const gateway = await EgressGateway.start({
    socketDir: join(dir, "gw"),
    allowHosts: [`${ORIGIN}:${port}`],
    allowPrivate: true,
    limitBytes: SANDBOX_DEFAULTS.egressLimitBytes,
    maxConnections: SANDBOX_DEFAULTS.egressMaxConnections,
    idleMs: SANDBOX_DEFAULTS.egressIdleMs,
    maxConnectionMs: SANDBOX_DEFAULTS.egressMaxConnectionMs,
    lookup: async () => [{ address: "127.0.0.1", family: 4 }],
  });
  const samples = { direct: [] as number[], gateway: [] as number[] };
  for (let i = 0; i < 3; i++) {
    await direct(port, ca, "/small");
    await viaGateway(gateway.socketPath, port, ca, "/small");
  }
  for (let i = 0; i < REQUESTS; i++) {
    const order = i % 2 === 0 ? (["direct", "gateway"] as const) : (["gateway", "direct"] as const);
    for (const way of order) {
      const started = performance.now();
      const n =
        way === "direct"
          ? await direct(port, ca, "/small")
          : await viaGateway(gateway.socketPath, port, ca, "/small");
      samples[way].push(performance.now() - started);
      if (n !== 2) throw new Error(`egress-bench: ${way} got ${n} bytes`);
    }
  }
  await gateway.close();
  const host = { direct: summarize(samples.direct), gateway: summarize(samples.gateway) };
  const addedHostMs = host.gateway.medianMs - host.direct.medianMs;

  // 2: what a command sees: the same python3 loop on the host, and in the sandbox through relay + gateway.
  const workspace = join(dir, "ws");
  execFileSync("mkdir", ["-p", workspace]);
  if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
  writeFileSync(join(workspace, "loop.py"), PY_LOOP);
  writeFileSync(join(workspace, "cert.pem"), ca);
  const onHost = JSON.parse(
    execFileSync(
      "python3",
      [join(workspace, "loop.py"), `https://127.0.0.1:${port}/small`, String(REQUESTS), cert],
      {
        encoding: "utf8",
      },
    ),
  ) as number[];
  const owner = statSync(workspace);
  await using sandbox = await DockerSandbox.open({
    workspace,
    removeOnStop: true,
    user: `${owner.uid}:${owner.gid}`,
    egress: { allowHosts: [`${ORIGIN}:${port}`], allowPrivate: true },
    egressLookup: async (hostname: string) =>
      hostname === ORIGIN ? [{ address: "127.0.0.1", family: 4 }] : Promise.reject(new Error("ENOTFOUND")),
  });
  const inside = await sandbox.exec(`python3 loop.py https://${ORIGIN}:${port}/small ${REQUESTS} cert.pem`);
  if (inside.exitCode !== 0) throw new Error(`egress-bench: sandbox loop failed: ${inside.stderr}`);
  const inSandbox = JSON.parse(inside.stdout) as number[];
  const py = { host: summarize(onHost), sandbox: summarize(inSandbox) };
  const addedSandboxMs = py.sandbox.medianMs - py.host.medianMs;

  const row = (name: string, s: Summary, base: Summary): string[] => [
    name,
    ms(s.medianMs),
    ms(s.p90Ms),
    ms(s.minMs),
    ms(s.maxMs),
    `${ratio(s.medianMs, base.medianMs)}x`,
  ];
  console.log(`HTTPS request on a fresh connection, ${REQUESTS} each`);
  console.log(
    formatTable(
      ["path", "median", "p90", "min", "max", "vs direct"],
      [
        row("host node, direct", host.direct, host.direct),
        row("host node, through gateway (CONNECT)", host.gateway, host.direct),
        row("python3 urllib on the host, direct", py.host, py.host),
        row("python3 urllib in the sandbox, relay + gateway", py.sandbox, py.host),
      ],
    ),
  );
  console.log(
    `\nadded per connection: ${ms(addedHostMs)} by the gateway, ${ms(addedSandboxMs)} by relay + gateway as a command sees it (target <= 15 ms)\n`,
  );

  // 3: the gateway's memory under parallel downloads, in a process of its own.
  const gw = await startChild("egress-gateway-child.ts", [join(dir, "gw2"), ORIGIN, String(port)], true);
  const { socketPath, baselineMaxRssKiB } = JSON.parse(gw.first) as {
    socketPath: string;
    baselineMaxRssKiB: number;
  };
  const finalLine = lastLine(gw.child);
  const started = performance.now();
  const got = await Promise.all(
    Array.from({ length: PARALLEL }, () => viaGateway(socketPath, port, ca, `/big?bytes=${DOWNLOAD_BYTES}`)),
  );
  const seconds = (performance.now() - started) / 1000;
  if (got.some((n) => n !== DOWNLOAD_BYTES))
    throw new Error(`egress-bench: downloads got ${got.join(",")} bytes`);
  gw.child.stdin?.end();
  const final = JSON.parse(await finalLine) as { maxRssKiB: number };
  const mb = (kib: number): number => Math.round(kib / 102.4) / 10;
  const memory = {
    parallel: PARALLEL,
    bytesEach: DOWNLOAD_BYTES,
    seconds: Math.round(seconds * 100) / 100,
    throughputMBps: Math.round((PARALLEL * DOWNLOAD_BYTES) / 1024 ** 2 / seconds),
    baselineMB: mb(baselineMaxRssKiB),
    peakMB: mb(final.maxRssKiB),
  };
  console.log(
    `Gateway process under ${PARALLEL} parallel downloads of ${DOWNLOAD_BYTES / 1024 ** 2} MB: maxRSS ${memory.peakMB} MB ` +
      `(baseline ${memory.baselineMB} MB; target < 100 MB), ${memory.throughputMBps} MB/s in ${memory.seconds} s\n`,
  );
  console.log(
    JSON.stringify({
      bench: "egress",
      requests: REQUESTS,
      host,
      python: py,
      addedHostMs,
      addedSandboxMs,
      memory,
    }),
  );
} catch (error) {
  console.error((error as Error).stack ?? String(error));
  exitCode = 1;
} finally {
  cleanup();
}
process.exit(exitCode);
