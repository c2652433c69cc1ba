/**
 * harness against its peers, on one engine and one image, one interleaved run (issues 24, 35):
 * mini-swe-agent, llm-sandbox, SWE-ReX (its bash session and its stateless `execute`) and epicbox,
 * each driven as an agent drives it by bench/peers/peer_driver.py, harness by
 * bench/peers/harness-driver.ts, over one line protocol: the same commands, timeouts and deadlines
 * for every system, every call timed inside its driver around the call only, every answer judged here
 * on its bytes (bench/peers/behaviour-checks.ts). bench/peers/README.md says what each peer was given
 * and why; the run prints Markdown tables and one JSON line with every sample.
 *
 * Measured, each round in a rotating order, one fresh driver process per system and round (its
 * modules loaded before anything is timed): from nothing (no container) to the first result, in
 * process; `true` back to back; `true` after 1 s idle each. Once each: the behaviour list and a 200 MB
 * flood (with the memory of every process the system runs, client and server). Nothing is asserted on
 * timings. Everything the bench's systems create is recorded by id as it is created, and only that is
 * removed (bench/peers/created-record.ts).
 *   npm run bench:peers   (env: BENCH_ROUNDS=20 BENCH_CALLS=10 BENCH_IDLE_CALLS=2 BENCH_FLOOD=1
 *                          BENCH_SYSTEMS=harness,mini,… BENCH_SWEREX_NETWORK=host)
 */
import { chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { ensureSandboxImage } from "../src/sandbox/docker/container/image.js";
import { CHECKS, type CheckContext, type Verdict } from "./peers/behaviour-checks.js";
import { claimRecord, readRecord, recoverAbandoned, removeRecorded } from "./peers/created-record.js";
import { DriverProcess, type DriverReply, type Ready } from "./peers/driver-protocol.js";
import { MemorySampler } from "./peers/memory-sampler.js";
import {
  behaviourCell,
  type Flood,
  figureCell,
  floodGot,
  floodMemory,
  floodReturned,
  markdownTable,
  SYSTEMS,
  type SystemName,
  TITLES,
} from "./peers/peer-tables.js";
import { peersPython } from "./peers/peers-venv.js";
import { ensureSwerexImage, type SwerexNetwork, swerexNetwork } from "./peers/swerex-setup.js";
import { envInt } from "./stats.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const ROUNDS = envInt("BENCH_ROUNDS", 20);
const CALLS = envInt("BENCH_CALLS", 10);
const IDLE_CALLS = envInt("BENCH_IDLE_CALLS", 2);
const IDLE_MS = 1000;
const FLOODS = process.env["BENCH_FLOOD"] !== "0";
const FLOOD_BYTES = 200_000_000;
const FLOOD_TIMEOUT_S = 60;
/** Past its timeout, how long a flood call is waited for before it counts as never returned. */
const FLOOD_SLACK_S = 15;
const RECORD_PREFIX = "harness-peers-record-";
const chosen = (process.env["BENCH_SYSTEMS"] ?? SYSTEMS.join(",")).split(",");
const systems = SYSTEMS.filter((s) => chosen.includes(s));

const docker = new Docker();
const started = performance.now();
const engine = await docker.version();
for (const cleanup of await recoverAbandoned(docker, tmpdir(), RECORD_PREFIX))
  console.error(
    `peers-bench: removed what an earlier run left: ${cleanup.removed.length} (${cleanup.failed.length} failed)`,
  );
const record = mkdtempSync(join(tmpdir(), RECORD_PREFIX));
claimRecord(record);
const image = await ensureSandboxImage(docker, (line) => console.error(line));
const say = (line: string) => console.error(`peers-bench: ${line}`);
const python = systems.some((s) => s !== "harness") ? peersPython(say) : "";
const swerex = systems.some((s) => s.startsWith("swerex"));
const swerexImage = swerex ? await ensureSwerexImage(docker, python, image, say) : "";
const network: SwerexNetwork = swerex ? await swerexNetwork(docker, record) : { name: "", note: "" };
const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-peers-ws-")));
if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);

let driverCount = 0;
/** A fresh driver for `name`, with a record directory of its own. */
async function startDriver(name: SystemName): Promise<{ driver: DriverProcess; dir: string }> {
  const dir = join(record, `${name}-${driverCount++}`);
  mkdirSync(dir);
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_RECORD_DIR: dir, BENCH_IMAGE: image };
  if (name === "harness") {
    const driver = await DriverProcess.start(
      process.execPath,
      ["--import", "tsx", join(ROOT, "bench", "peers", "harness-driver.ts")],
      { ...env, BENCH_WORKSPACE: workspace },
    );
    return { driver, dir };
  }
  Object.assign(env, {
    PYTHONDONTWRITEBYTECODE: "1",
    BENCH_SWEREX_IMAGE: swerexImage,
    BENCH_SWEREX_NETWORK: network.name,
    BENCH_SWEREX_NETWORK_NOTE: network.note,
    ...(network.port === undefined ? {} : { BENCH_SWEREX_PORT: String(network.port) }),
  });
  const driver = await DriverProcess.start(
    python,
    [join(ROOT, "bench", "peers", "peer_driver.py"), name],
    env,
  );
  return { driver, dir };
}

/** Ends a driver (asking it to close when it can) and removes what it recorded. */
async function endDriver(driver: DriverProcess, dir: string, close: boolean): Promise<void> {
  if (close) await driver.request({ op: "close", deadline: 60 });
  else driver.kill();
  await driver.exit(15);
  const cleanup = await removeRecorded(docker, readRecord(dir));
  for (const f of cleanup.failed)
    console.error(`peers-bench: could not remove ${f.kind} ${f.id}: ${f.error}`);
  if (cleanup.failed.length === 0) rmSync(dir, { recursive: true, force: true });
}

const run = (driver: DriverProcess, command: string, timeout = 20, deadline = 40, digest = false) =>
  driver.request({ op: "run", command, timeout, deadline, digest });
const sleep = (msToWait: number) => new Promise<void>((resolve) => setTimeout(resolve, msToWait));

const samples = {
  fromNothing: {} as Record<string, number[]>,
  backToBack: {} as Record<string, number[]>,
  afterIdle: {} as Record<string, number[]>,
};
for (const name of systems) for (const bucket of Object.values(samples)) bucket[name] = [];
const failures: Record<string, string[]> = {};
const settings: Partial<Record<SystemName, Ready["settings"]>> = {};

function failedCall(name: SystemName, what: string, reply: DriverReply): boolean {
  const bad = !reply.returned || (reply.error != null && reply.stdout == null) || reply.exit !== 0;
  if (bad) failures[name] = [...(failures[name] ?? []), `${what}: ${JSON.stringify(reply).slice(0, 300)}`];
  return bad;
}

/** One round for one system: from nothing, back to back, after idle. `keep` false: a warm-up. */
async function round(name: SystemName, keep: boolean): Promise<void> {
  if ((failures[name]?.length ?? 0) >= 3) return;
  const { driver, dir } = await startDriver(name);
  settings[name] = driver.ready.settings;
  let opened = false;
  try {
    const open = await driver.request({ op: "open", deadline: 120 });
    if (failedCall(name, "open", open)) return;
    opened = true;
    if (keep) samples.fromNothing[name]?.push(open.ms ?? 0);
    for (let i = 0; i < (keep ? CALLS : 2); i++) {
      const r = await run(driver, "true");
      if (failedCall(name, "true", r)) return;
      if (keep) samples.backToBack[name]?.push(r.ms ?? 0);
    }
    for (let i = 0; keep && i < IDLE_CALLS; i++) {
      await sleep(IDLE_MS);
      const r = await run(driver, "true");
      if (failedCall(name, "true after idle", r)) return;
      samples.afterIdle[name]?.push(r.ms ?? 0);
    }
  } finally {
    await endDriver(driver, dir, opened);
  }
}

async function processesIn(dir: string): Promise<string[]> {
  const lines: string[] = [];
  for (const c of readRecord(dir).filter((x) => x.kind === "container")) {
    // Gone (404) or stopped (409): nothing of the system runs there.
    const top = (await docker
      .getContainer(c.id)
      .top({ ps_args: "-eo pid,args" })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode === 404 || error.statusCode === 409) return undefined;
        throw error;
      })) as { Processes?: string[][] } | undefined;
    for (const row of top?.Processes ?? []) lines.push(row.slice(1).join(" "));
  }
  return lines;
}

/** The behaviour list on one system; a driver left stuck by a check is replaced by a fresh one. */
async function behaviours(name: SystemName): Promise<Record<string, Verdict>> {
  const verdicts: Record<string, Verdict> = {};
  let current = await startDriver(name);
  let open = await current.driver.request({ op: "open", deadline: 120 });
  let stuck = false;
  try {
    for (const check of CHECKS) {
      if (stuck || !open.returned || open.error) {
        await endDriver(current.driver, current.dir, false);
        current = await startDriver(name);
        open = await current.driver.request({ op: "open", deadline: 120 });
        stuck = false;
      }
      if (!open.returned || open.error) {
        verdicts[check.name] = { cell: `could not open: ${open.error ?? "hung"}`, ok: false };
        continue;
      }
      const { driver, dir } = current;
      const ctx: CheckContext = {
        run: async (command, timeout, deadline = 2 * timeout) => {
          const r = await run(driver, command, timeout, deadline);
          if (!r.returned) stuck = true;
          return r;
        },
        processes: () => processesIn(dir),
        sleep,
      };
      verdicts[check.name] = await check.judge(ctx);
    }
  } finally {
    await endDriver(current.driver, current.dir, !stuck && open.returned === true);
  }
  return verdicts;
}

async function flood(name: SystemName): Promise<Flood | undefined> {
  const { driver, dir } = await startDriver(name);
  const idle = new MemorySampler(docker, driver.pid, dir);
  const clientIdleMB = (await idle.stop()).clientMB;
  let closeIt = false;
  try {
    const open = await driver.request({ op: "open", deadline: 120 });
    if (failedCall(name, "open (flood)", open)) return undefined;
    const sampler = new MemorySampler(docker, driver.pid, dir);
    sampler.start(100);
    const reply = await run(
      driver,
      `head -c ${FLOOD_BYTES} /dev/zero`,
      FLOOD_TIMEOUT_S,
      FLOOD_TIMEOUT_S + FLOOD_SLACK_S,
      true,
    );
    const memory = await sampler.stop();
    closeIt = reply.returned;
    return { reply, memory, clientIdleMB };
  } finally {
    await endDriver(driver, dir, closeIt);
  }
}

let exitCode = 0;
const stopOnSignal = (signal: NodeJS.Signals) => {
  console.error(`peers-bench: ${signal}: removing what the run recorded`);
  void removeRecorded(docker, readRecord(record)).finally(() => {
    rmSync(record, { recursive: true, force: true });
    process.exit(130);
  });
};
process.once("SIGINT", stopOnSignal);
process.once("SIGTERM", stopOnSignal);
const loadAtStart = loadavg().map((x) => x.toFixed(2));
try {
  const others = (await docker.listContainers()).length;
  console.log(
    `peers-bench: engine ${engine.Version}, image ${image}, node ${process.version}, ${cpus().length} CPUs, load ${loadAtStart.join(" ")}, other running containers ${others}`,
  );
  for (const name of systems) await round(name, false);
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < systems.length; k++)
      await round(systems[(r + k) % systems.length] as SystemName, true);
    console.error(`peers-bench: round ${r + 1}/${ROUNDS}, load ${loadavg()[0]?.toFixed(2)}`);
  }
  const verdicts: Partial<Record<SystemName, Record<string, Verdict>>> = {};
  for (const name of systems) verdicts[name] = await behaviours(name);
  const floods: Partial<Record<SystemName, Flood>> = {};
  if (FLOODS)
    for (const name of systems) {
      const f = await flood(name);
      if (f) floods[name] = f;
    }
  const loadAtEnd = loadavg().map((x) => x.toFixed(2));
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);

  const h = (bucket: Record<string, number[]>) => bucket["harness"] ?? [];
  const figure = (title: string, bucket: Record<string, number[]>) => [
    title,
    ...systems.map((n) => figureCell(bucket[n] ?? [], h(bucket), n === "harness")),
  ];
  const header = ["", ...systems.map((n) => TITLES[n])];
  console.log(
    `\n${ROUNDS} rounds, interleaved, ${CALLS} calls back to back and ${IDLE_CALLS} after ${IDLE_MS / 1000} s idle per round; median / p95 (peer ÷ harness of the medians; below 1 the peer is faster). Load ${loadAtStart[0]} at the start, ${loadAtEnd[0]} at the end; ${minutes} min.\n`,
  );
  console.log(
    markdownTable(header, [
      figure("per call `true`, back to back", samples.backToBack),
      figure(`per call \`true\`, each after ${IDLE_MS / 1000} s idle`, samples.afterIdle),
      figure("from nothing to the first result, in process", samples.fromNothing),
      ...(FLOODS
        ? [
            [
              "200 MB flood: the call returns",
              ...systems.map((n) => (floods[n] ? floodReturned(floods[n], FLOOD_TIMEOUT_S) : "—")),
            ],
            [
              "200 MB flood: what the caller got",
              ...systems.map((n) => (floods[n] ? floodGot(floods[n], FLOOD_BYTES) : "—")),
            ],
            [
              "200 MB flood: peak memory, client and server",
              ...systems.map((n) => (floods[n] ? floodMemory(floods[n]) : "—")),
            ],
          ]
        : []),
    ]),
  );
  console.log(
    `\n${markdownTable(
      ["behaviour", ...systems.map((n) => TITLES[n])],
      CHECKS.map((c) => [c.name, ...systems.map((n) => behaviourCell(verdicts[n]?.[c.name]))]),
    )}`,
  );
  const keys = [...new Set(systems.flatMap((n) => Object.keys(settings[n] ?? {})))];
  console.log(
    `\n${markdownTable(
      ["given", ...systems.map((n) => TITLES[n])],
      keys.map((k) => [k, ...systems.map((n) => settings[n]?.[k] ?? "—")]),
    )}`,
  );
  for (const [name, why] of Object.entries(failures)) console.log(`\n${name} failed: ${why.join("\n  ")}`);
  console.log(
    `\n${JSON.stringify({ bench: "peers", engine: engine.Version, image, swerexImage, network: network.note, loadAtStart, loadAtEnd, minutes, samples, verdicts, floods, failures })}`,
  );
} catch (error) {
  console.error((error as Error).stack ?? error);
  exitCode = 1;
} finally {
  const cleanup = await removeRecorded(docker, readRecord(record));
  for (const f of cleanup.failed)
    console.error(`peers-bench: could not remove ${f.kind} ${f.id}: ${f.error}`);
  if (cleanup.failed.length === 0) rmSync(record, { recursive: true, force: true });
  rmSync(workspace, { recursive: true, force: true });
}
process.exit(exitCode);
