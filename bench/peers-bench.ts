/**
 * harness against its peers on the same engine and image, in one interleaved run (issue 24):
 * mini-swe-agent (DockerEnvironment), llm-sandbox (SandboxSession) and SWE-ReX (DockerDeployment),
 * installed once into a cached virtual environment outside the repository (peers/peers-venv.ts) and
 * driven by peers/peer_driver.py with their defaults, except the image: harness's sandbox image.
 *
 * Measured, each round in a rotating order: from nothing (no container) to the first result, from
 * the process's spawn (harness: `harness exec -- echo first`, the built CLI); then per call, `true`
 * back to back in one sandbox. Once: a 200 MB flood through one call (the host process's peak RSS,
 * and whether the call came back), and the behaviour list (peer_driver.py `behaviours`, the same
 * checks here for harness). A report, not a test: nothing is asserted on timings.
 *   npm run bench:peers   (env: BENCH_ROUNDS=5 BENCH_CALLS=30 BENCH_FLOOD=1)
 */
import { spawn } from "node:child_process";
import { chownSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { ensureSandboxImage } from "../src/sandbox/docker/container/image.js";
import { LABEL_MANAGED } from "../src/sandbox/docker/container/labels.js";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { peersPython } from "./peers/peers-venv.js";
import { envInt, formatTable, ms, ratio, type Summary, summarize } from "./stats.js";
import { removeContainers } from "./workspace-containers.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const DRIVER = join(ROOT, "bench", "peers", "peer_driver.py");
const CLI = join(ROOT, "bin", "harness.mjs");
const ROUNDS = envInt("BENCH_ROUNDS", 5);
const CALLS = envInt("BENCH_CALLS", 30);
/** BENCH_FLOOD=0 leaves the floods out (they take minutes: some peers hold the whole output). */
const FLOODS = process.env["BENCH_FLOOD"] !== "0";
const FLOOD_BYTES = 200_000_000;
const PEERS = ["mini", "llm-sandbox", "swerex"] as const;
const ALL = ["harness", ...PEERS] as const;
type Name = (typeof ALL)[number];
type Behaviours = Record<string, { ok: boolean } & Record<string, unknown>>;

interface Spawned {
  /** ms from spawn to the line starting with the marker; undefined without one. */
  markerMs: number | undefined;
  code: number | null;
  /** The output's lines, unless it was only counted. */
  lines: string[];
  stdoutBytes: number;
  stderr: string;
}

/** Spawns, timing the first stdout line that starts with `marker`; `count` only counts the output. */
function timedSpawn(
  command: string,
  args: string[],
  options: { marker?: string; count?: boolean; timeoutMs: number },
): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let markerMs: number | undefined;
    let text = "";
    let stdoutBytes = 0;
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (options.count) return;
      text += chunk.toString("utf8");
      if (
        markerMs === undefined &&
        options.marker &&
        text.split("\n").some((l) => l.startsWith(options.marker ?? ""))
      )
        markerMs = performance.now() - started;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = `${stderr}${chunk.toString("utf8")}`.slice(-4000);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ markerMs, code, lines: text.split("\n"), stdoutBytes, stderr });
    });
  });
}

/** The JSON after `prefix` on one of the lines, or undefined. */
function jsonLine<T>(lines: string[], prefix: string): T | undefined {
  const line = lines.find((l) => l.startsWith(`${prefix} `));
  return line === undefined ? undefined : (JSON.parse(line.slice(prefix.length + 1)) as T);
}

const docker = new Docker();
await docker.ping();
const engine = await docker.version();
const image = await ensureSandboxImage(docker, (line) => console.error(line));
const python = peersPython((line) => console.error(`peers-bench: ${line}`));
const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-peers-")));
if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);

/** harness's side of peer_driver.py `behaviours`: the same commands, in the same order. */
async function harnessBehaviours(sandbox: DockerSandbox): Promise<Behaviours> {
  const out: Behaviours = {};
  const t = performance.now();
  let r = await sandbox.exec("sleep 30 >/dev/null 2>&1 & echo started", { timeoutMs: 20_000 });
  const seconds = (performance.now() - t) / 1000;
  out["background sleep returns"] = { ok: r.stdout.includes("started") && seconds < 15, seconds };
  r = await sandbox.exec("echo out; echo err >&2; sh -c 'exit 3'");
  out["stdout, stderr apart, exit code"] = {
    ok: r.stdout.trim() === "out" && r.stderr.trim() === "err" && r.exitCode === 3,
    exit: r.exitCode,
  };
  await sandbox.exec("cd /tmp");
  r = await sandbox.exec("pwd");
  out["cwd persists"] = { ok: r.stdout.trim() === "/tmp", pwd: r.stdout.trim() };
  r = await sandbox.exec("id -u");
  out["non-root"] = { ok: !["0", ""].includes(r.stdout.trim()), uid: r.stdout.trim() };
  r = await sandbox.exec("grep -cv -e '^ *lo:' -e '|' /proc/net/dev");
  out["no network"] = { ok: r.stdout.trim() === "0", interfaces: r.stdout.trim() };
  r = await sandbox.exec("printf 'a\\000b\\377c'");
  // harness shows what is not text as escapes (by design: the model reads it), and counts the bytes.
  out["binary output intact"] = {
    ok: r.stdoutBytes === 5,
    output: JSON.stringify(r.stdout),
    bytes: r.stdoutBytes,
  };
  await sandbox.exec("setsid sleep 301 & sleep 60", { timeoutMs: 3_000 });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const top = (await docker.getContainer(sandbox.containerId).top({ ps_args: "-eo pid,args" })) as {
    Processes?: string[][];
  };
  const left = (top.Processes ?? []).some((row) => row.join(" ").includes("sleep 301"));
  out["timed-out setsid child gone"] = { ok: !left };
  return out;
}

const fromNothing: Record<Name, number[]> = { harness: [], mini: [], "llm-sandbox": [], swerex: [] };
const perCall: Record<Name, number[]> = { harness: [], mini: [], "llm-sandbox": [], swerex: [] };
const behaviours: Partial<Record<Name, Behaviours>> = {};
const failures: Partial<Record<Name, string>> = {};

async function roundFor(name: Name, first: boolean): Promise<void> {
  if (failures[name]) return;
  if (name === "harness") {
    await removeContainers(docker, workspace);
    const r = await timedSpawn(process.execPath, [CLI, "exec", "-w", workspace, "--", "echo", "first"], {
      marker: "first",
      timeoutMs: 60_000,
    });
    if (r.code !== 0 || r.markerMs === undefined) throw new Error(`harness exec failed: ${r.stderr}`);
    fromNothing.harness.push(r.markerMs);
    const sandbox = await DockerSandbox.open({ workspace });
    try {
      // As the drivers do: the first call (which waits for the sandbox to be ready) is not timed.
      await sandbox.exec("echo first");
      for (let i = 0; i < CALLS; i++) {
        const t = performance.now();
        await sandbox.exec("true");
        perCall.harness.push(performance.now() - t);
      }
      if (first) behaviours.harness = await harnessBehaviours(sandbox);
    } finally {
      await sandbox.stop();
    }
    return;
  }
  const r = await timedSpawn(python, [DRIVER, "calls", name, image, String(CALLS)], {
    marker: "FIRST",
    timeoutMs: 300_000,
  });
  const result = jsonLine<{ calls_ms: number[]; behaviours: Behaviours }>(r.lines, "RESULT");
  if (r.markerMs === undefined || result === undefined) {
    failures[name] = r.stderr.trim().split("\n").slice(-3).join(" | ");
    return;
  }
  fromNothing[name].push(r.markerMs);
  perCall[name].push(...result.calls_ms);
  if (first) behaviours[name] = result.behaviours;
}

interface Flood {
  /** The call came back with all 200 MB: "whole"; came back with less: "partial"; never: "no". */
  returned: "whole" | "partial" | "no";
  peakRssMB: number | undefined;
  detail: string;
}

/** One 200 MB flood, under GNU time for the peak RSS of the process (and its children). */
async function flood(name: Name): Promise<Flood> {
  const args =
    name === "harness"
      ? [process.execPath, CLI, "exec", "-w", workspace, "--", "head", "-c", String(FLOOD_BYTES), "/dev/zero"]
      : [python, DRIVER, "flood", name, image, String(FLOOD_BYTES)];
  const r = await timedSpawn("/usr/bin/time", ["-f", "MAXRSS %M", ...args], {
    count: name === "harness",
    timeoutMs: 180_000,
  });
  const rss = /MAXRSS (\d+)/.exec(r.stderr)?.[1];
  const peakRssMB = rss === undefined ? undefined : Math.round(Number(rss) / 1024);
  if (name === "harness")
    return {
      returned: r.code !== 0 ? "no" : r.stdoutBytes === FLOOD_BYTES ? "whole" : "partial",
      peakRssMB,
      detail: `${r.stdoutBytes} bytes streamed to stdout`,
    };
  const result = jsonLine<{ returned: boolean; chars?: number; error?: string }>(r.lines, "RESULT");
  return {
    returned: result?.returned !== true ? "no" : result.chars === FLOOD_BYTES ? "whole" : "partial",
    peakRssMB,
    detail: result
      ? (result.error ?? `${result.chars} characters returned`)
      : `no result (exit ${r.code}${r.code === null ? ", killed at 180 s" : ""})`,
  };
}

/** Peers' containers left by a driver that was killed: made by this run, on this image, not harness's. */
async function removePeerLeftovers(before: Set<string>): Promise<void> {
  for (const c of await docker.listContainers({ all: true })) {
    if (before.has(c.Id) || c.Image !== image || c.Labels[LABEL_MANAGED] !== undefined) continue;
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => {});
  }
}

const existing = new Set((await docker.listContainers({ all: true })).map((c) => c.Id));
let exitCode = 0;
try {
  const others = (await docker.listContainers()).length;
  const load = loadavg().map((x) => x.toFixed(2));
  console.log(
    `peers-bench: engine ${engine.Version}, image ${image}, node ${process.version}, ${cpus().length} CPUs, load ${load.join(" ")}, other running containers ${others}`,
  );
  for (let round = 0; round < ROUNDS; round++) {
    const order = ALL.map((_, i) => ALL[(i + round) % ALL.length] as Name);
    for (const name of order) await roundFor(name, round === 0);
  }
  const floods: Partial<Record<Name, Flood>> = {};
  if (FLOODS) for (const name of ALL) if (!failures[name]) floods[name] = await flood(name);

  const stat = (xs: number[]): Summary | undefined => (xs.length > 0 ? summarize(xs) : undefined);
  const h = { first: stat(fromNothing.harness), call: stat(perCall.harness) };
  const rows = ALL.map((name) => {
    const first = stat(fromNothing[name]);
    const call = stat(perCall[name]);
    if (!first || !call) return [name, "could not run", "", "", "", "", ""];
    return [
      name,
      `${ms(call.medianMs)} / ${ms(call.p95Ms)}`,
      h.call ? `${ratio(call.medianMs, h.call.medianMs)}x` : "",
      `${ms(first.medianMs)} / ${ms(first.p95Ms)}`,
      h.first ? `${ratio(first.medianMs, h.first.medianMs)}x` : "",
      floods[name]?.returned ?? "?",
      floods[name]?.peakRssMB === undefined ? "?" : `${floods[name]?.peakRssMB} MB`,
    ];
  });
  console.log(
    `\n${ROUNDS} rounds, interleaved; per call: ${CALLS} x \`true\` back to back per round; from nothing: spawn to the first result, no container\n`,
  );
  console.log(
    formatTable(
      [
        "",
        "per call median / p95",
        "vs harness",
        "from nothing median / p95",
        "vs harness",
        "200 MB flood comes back",
        "flood peak RSS",
      ],
      rows,
    ),
  );
  const checks = Object.keys(behaviours.harness ?? {});
  console.log(
    `\n${formatTable(
      ["behaviour", ...ALL],
      checks.map((check) => [
        check,
        ...ALL.map((name) => {
          const b = behaviours[name]?.[check];
          return b === undefined ? "-" : b.ok ? "yes" : "no";
        }),
      ]),
    )}`,
  );
  for (const [name, why] of Object.entries(failures)) console.log(`\n${name} could not run: ${why}`);
  for (const name of ALL) if (floods[name]) console.log(`flood, ${name}: ${floods[name]?.detail}`);
  console.log(
    `\n${JSON.stringify({ bench: "peers", engine: engine.Version, image, load, fromNothing, perCall, behaviours, floods, failures })}`,
  );
} catch (error) {
  console.error((error as Error).stack ?? error);
  exitCode = 1;
} finally {
  await removePeerLeftovers(existing);
  await removeContainers(docker, workspace);
  rmSync(workspace, { recursive: true, force: true });
}
process.exit(exitCode);
