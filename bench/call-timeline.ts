/**
 * Where one harness call's time goes, back to back and after 1 s idle (issue 35): `perf trace`
 * stamps, on one clock, the reads and writes of this process, of dockerd, of the exec's containerd
 * shim and of the executor, and the bench splits each call into its hops:
 *   host → engine → shim → executor (the request frame), the executor handing the job to its spare,
 *   the shell's run up to its stop (the EXIT trap's SIGSTOP: the executor reads its cwd), its exit,
 *   the executor's bookkeeping up to the end frame, and the end frame's way back to this process.
 * With BENCH_SPIN=1 a third series runs each call after 1 s idle while a niced busy loop keeps every
 * CPU out of its idle states: what is left of the idle cost then is not the CPUs' wake-up.
 * Linux, root, perf with tracefs; a measurement tool, nothing asserted. perf trace slows every
 * syscall it stamps, so compare the series with one another, not with the peer bench's figures.
 *   node --import tsx bench/call-timeline.ts   (env: BENCH_CALLS=30 BENCH_SPIN=1)
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  chownSync,
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { envInt, formatTable, summarize } from "./stats.js";
import { executorPids } from "./workspace-containers.js";

const CALLS = envInt("BENCH_CALLS", 30);
const SPIN = process.env["BENCH_SPIN"] === "1";
const MARK_START = 777;
const MARK_END = 778;

interface Event {
  t: number;
  pid: number;
  call: string;
  /** perf leaves out an argument that is 0: a read of stdin shows no fd. */
  fd: number;
  /** Bytes moved (the syscall's return), negative for an error. */
  bytes: number;
}

const LINE = /^\s*([\d.]+) \(\s*[\d.]*\s*ms\): \S+?\/(\d+) (read|write|readv|writev)\((.*)\)\s+= (-?\d+)/;

function parse(text: string): Event[] {
  const events: Event[] = [];
  for (const line of text.split("\n")) {
    const m = LINE.exec(line);
    if (!m) continue;
    events.push({
      t: Number(m[1]),
      pid: Number(m[2]),
      call: (m[3] ?? "").replace(/v$/, ""),
      fd: Number(/fd: (\d+)/.exec(m[4] ?? "")?.[1] ?? 0),
      bytes: Number(m[5]),
    });
  }
  // perf writes each CPU's buffer in turn: put the events back in time order.
  return events.sort((a, b) => a.t - b.t);
}

/** Thread ids of a process (perf trace names events by thread). */
function threads(pid: number): Set<number> {
  return new Set(readdirSync(`/proc/${pid}/task`).map(Number));
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

type Phases = Record<string, number>;
interface Who {
  node: Set<number>;
  exec: number;
  shim: Set<number>;
  dockerd: Set<number>;
}

/**
 * One call's hops (ms), from the events after its start marker. The executor's SIGCHLDs show as the
 * one-byte writes of its signal handler (wakeup fd): the shell stopped by its EXIT trap, continued,
 * exited.
 */
function phases(events: readonly Event[], who: Who): Phases | undefined {
  const first = (pred: (e: Event) => boolean, after: number) => events.find((e) => e.t >= after && pred(e));
  const last = (pred: (e: Event) => boolean, before: number) =>
    [...events].reverse().find((e) => e.t <= before && pred(e));
  const inNode = (e: Event) => who.node.has(e.pid);
  const start = first((e) => inNode(e) && e.call === "write" && e.bytes === MARK_START, 0);
  const end = start && first((e) => inNode(e) && e.call === "write" && e.bytes === MARK_END, start.t);
  if (!start || !end) return undefined;
  const req = first((e) => inNode(e) && e.call === "write" && e.bytes >= 21 && e.fd !== start.fd, start.t);
  if (!req) return undefined;
  const size = req.bytes;
  const dIn = first((e) => who.dockerd.has(e.pid) && e.call === "read" && e.bytes === size, req.t);
  const sIn = first((e) => who.shim.has(e.pid) && e.call === "read" && e.bytes === size, req.t);
  const isExec = (e: Event) => e.pid === who.exec;
  const xIn = first((e) => isExec(e) && e.call === "read" && e.fd === 0 && e.bytes > 0, req.t);
  const hand = xIn && first((e) => isExec(e) && e.call === "write" && e.fd > 2 && e.bytes > 4, xIn.t);
  const sigs = events.filter(
    (e) => isExec(e) && e.call === "write" && e.fd > 2 && e.bytes === 1 && e.t <= end.t,
  );
  const xOut = last((e) => isExec(e) && e.call === "write" && e.fd === 1 && e.bytes > 0, end.t);
  if (!dIn || !sIn || !xIn || !hand || !xOut || sigs.length < 2) return undefined;
  const sOut = first((e) => who.shim.has(e.pid) && e.call === "read" && e.bytes === xOut.bytes, xOut.t);
  const dOut =
    sOut && first((e) => who.dockerd.has(e.pid) && e.call === "read" && e.bytes === xOut.bytes, sOut.t);
  const nOut = dOut && first((e) => inNode(e) && e.call === "read" && e.bytes > 0, dOut.t);
  if (!sOut || !dOut || !nOut) return undefined;
  const stopped = sigs.find((e) => e.t > hand.t) ?? hand;
  const exited = sigs.filter((e) => e.t <= xOut.t).at(-1) ?? stopped;
  return {
    "node: exec() called → request written": req.t - start.t,
    "request: node → dockerd": dIn.t - req.t,
    "request: dockerd → shim": sIn.t - dIn.t,
    "request: shim → executor": xIn.t - sIn.t,
    "executor: request → job to its spare": hand.t - xIn.t,
    "spare → bash → `true` → EXIT trap's stop": stopped.t - hand.t,
    "stop → cwd read → continued → exit": exited.t - stopped.t,
    "executor: exit → end frame written": xOut.t - exited.t,
    "end frame: executor → shim": sOut.t - xOut.t,
    "end frame: shim → dockerd": dOut.t - sOut.t,
    "end frame: dockerd → node": nOut.t - dOut.t,
    "node: end frame → exec() resolved": end.t - nOut.t,
    "whole call": end.t - start.t,
  };
}

const docker = new Docker();
const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-timeline-")));
if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
const sandbox = await DockerSandbox.open({ workspace, removeOnStop: true });
const devnull = openSync("/dev/null", "w");
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
let perf: ChildProcess | undefined;
const spinners: ChildProcess[] = [];
try {
  for (let i = 0; i < 5; i++) await sandbox.exec("true");
  const container = docker.getContainer(sandbox.containerId);
  const [execPid] = await executorPids(container);
  if (execPid === undefined) throw new Error("no executor found");
  const exec = Number(execPid);
  const shim = parentOf(exec);
  const dockerd = Number(readFileSync("/var/run/docker.pid", "utf8").trim());
  const who = { node: threads(process.pid), exec, shim: threads(shim), dockerd: threads(dockerd) };
  // BENCH_PERF_OUT keeps perf's own output for a look by hand.
  const out = process.env["BENCH_PERF_OUT"] ?? join(workspace, "perf.txt");
  perf = spawn(
    "perf",
    [
      "trace",
      "-T",
      "--comm",
      "-o",
      out,
      "-p",
      [process.pid, dockerd, shim, exec].join(","),
      "-e",
      "read,write,readv,writev",
    ],
    { stdio: "ignore" },
  );
  await sleep(2000);
  const labels: string[] = [];
  const call = async (label: string, idleMs: number) => {
    if (idleMs > 0) await sleep(idleMs);
    writeSync(devnull, Buffer.alloc(MARK_START));
    await sandbox.exec("true");
    writeSync(devnull, Buffer.alloc(MARK_END));
    labels.push(label);
  };
  // In blocks of 5, the series taking turns, so that a change in the machine's load falls on all.
  for (let done = 0; done < CALLS; done += 5) {
    await call("warm-up", 0);
    for (let i = 0; i < 5; i++) await call("back to back", 0);
    for (let i = 0; i < 5; i++) await call("after 1 s idle", 1000);
    if (!SPIN) continue;
    for (let i = 0; i < cpus().length; i++)
      spinners.push(spawn("nice", ["-n", "19", process.execPath, "-e", "for(;;){}"], { stdio: "ignore" }));
    for (let i = 0; i < 5; i++) await call("after 1 s idle, CPUs kept busy", 1000);
    for (const s of spinners.splice(0)) s.kill("SIGKILL");
  }
  await sleep(500);
  perf.kill("SIGINT");
  await new Promise((resolve) => perf?.once("exit", resolve));
  const events = parse(readFileSync(out, "utf8"));
  // Cut the events at each call's start marker.
  const starts = events.filter((e) => who.node.has(e.pid) && e.call === "write" && e.bytes === MARK_START);
  const bySeries = new Map<string, Phases[]>();
  starts.forEach((s, i) => {
    const next = starts[i + 1]?.t ?? Number.POSITIVE_INFINITY;
    const p = phases(
      events.filter((e) => e.t >= s.t && e.t < next),
      who,
    );
    const label = labels[i] ?? "?";
    if (p && label !== "warm-up") bySeries.set(label, [...(bySeries.get(label) ?? []), p]);
  });
  const names = [...bySeries.keys()];
  const keys = Object.keys(bySeries.get(names[0] ?? "")?.[0] ?? {});
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
  const parsed = names.map((n) => `${n} ${bySeries.get(n)?.length}`).join(", ");
  console.log(`call timeline: ${CALLS} calls a series, load ${load}; calls parsed: ${parsed}`);
  console.log("medians in ms (robust to the load's outliers; they need not add up to the whole call's)\n");
  const of = (n: string, k: string) => (bySeries.get(n) ?? []).map((p) => p[k] ?? 0);
  console.log(
    formatTable(
      ["hop", ...names],
      keys.map((k) => [k, ...names.map((n) => summarize(of(n, k)).medianMs.toFixed(2))]),
    ),
  );
} finally {
  for (const s of spinners) s.kill("SIGKILL");
  perf?.kill("SIGINT");
  closeSync(devnull);
  await sandbox.stop();
  rmSync(workspace, { recursive: true, force: true });
}
