/**
 * A Docker engine of the test's own, to kill and start again without touching the machine's
 * (test/faults/engine-restart.test.ts): its own data root, exec root, pid file and socket under one
 * scratch directory, and the same flags as scripts/ensure-docker.sh (no bridge, no iptables rules).
 *
 * containerd: dockerd looks for a system containerd at /run/containerd/containerd.sock and uses it
 * when it answers; otherwise it starts one of its own under its exec root, which it ends when it
 * ends and which dies with it when it is SIGKILLed (the shims and the containers stay, as they do
 * for any engine). Either way this engine's containers live in a containerd namespace of their own,
 * so a shared containerd never mixes them with the machine engine's `moby` namespace.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import Docker from "dockerode";

export interface SecondEngine {
  /** DOCKER_HOST for harness and the docker CLI. */
  readonly host: string;
  /** A client on it. */
  readonly docker: Docker;
  /** Whether its dockerd process runs. */
  readonly running: boolean;
  /** Starts dockerd (again) on the same data root; resolves once it answers a ping. */
  start(): Promise<void>;
  /** Sends `signal` to dockerd and resolves once it has exited (SIGTERM: a clean stop). */
  kill(signal: NodeJS.Signals): Promise<void>;
  /** `docker save tag | docker -H this load`, unless it has the image already. */
  loadImage(tag: string): Promise<void>;
  /** Stops it, ends what it left (its containerd, shims), unmounts and removes its directory. */
  remove(): Promise<void>;
}

/** Whether this machine can start a second engine: root, and dockerd and the docker CLI installed. */
export function canStartEngine(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync("sh", ["-c", "command -v dockerd && command -v docker"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A scratch engine under a new directory in `parent` (short: a socket path has 108 bytes at most). */
export function secondEngine(parent = "/tmp"): SecondEngine {
  const dir = mkdtempSync(join(parent, "harness-engine-"));
  for (const sub of ["data", "exec", "run"]) mkdirSync(join(dir, sub));
  const socket = join(dir, "run", "docker.sock");
  const docker = new Docker({ socketPath: socket });
  // Its own per engine: on a shared containerd its shims are found by it (`-namespace NAME`).
  const namespace = `harness-fault-${basename(dir).slice("harness-engine-".length).toLowerCase()}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const args = [
    `--data-root=${join(dir, "data")}`,
    `--exec-root=${join(dir, "exec")}`,
    `--pidfile=${join(dir, "run", "docker.pid")}`,
    `-H=unix://${socket}`,
    "--bridge=none",
    "--iptables=false",
    `--containerd-namespace=${namespace}`,
    `--containerd-plugins-namespace=${namespace}-plugins`,
  ];

  async function answers(): Promise<boolean> {
    try {
      await docker.ping();
      return true;
    } catch {
      return false;
    }
  }

  const engine: SecondEngine = {
    host: `unix://${socket}`,
    docker,
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    },
    async start() {
      if (engine.running) return;
      // A SIGKILLed dockerd's own containerd dies with it, but not at once: a dockerd started
      // meanwhile finds its pid file, takes it for running, and gives up waiting for its socket.
      await gone(join(dir, "exec", "containerd", "containerd.pid"));
      const log = openSync(join(dir, "dockerd.log"), "a");
      // From /: a daemon keeps its working directory (scripts/ensure-docker.sh says why).
      const started = spawn("dockerd", args, { cwd: "/", stdio: ["ignore", log, log], detached: true });
      child = started;
      exited = new Promise((resolve) => started.once("exit", () => resolve()));
      // Not a timed assertion: how long a loaded machine may take to start an engine at all.
      for (let i = 0; i < 600; i++) {
        if (!engine.running) break;
        if (await answers()) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const tail = readFileSync(join(dir, "dockerd.log"), "utf8").split("\n").slice(-20).join("\n");
      throw new Error(`the test's second Docker engine did not start; its log:\n${tail}`);
    },
    async kill(signal) {
      if (!engine.running) return;
      child?.kill(signal);
      await exited;
    },
    async loadImage(tag) {
      if (
        await docker
          .getImage(tag)
          .inspect()
          .then(
            () => true,
            () => false,
          )
      )
        return;
      execFileSync("sh", ["-c", 'docker save "$1" | docker -H "$2" load -q', "sh", tag, engine.host], {
        stdio: ["ignore", "ignore", "inherit"],
      });
    },
    async remove() {
      await engine.kill("SIGTERM");
      // What a SIGKILLed dockerd left: its containerd (when it had its own) and the containers'
      // shims, found by this engine's own directory on their command line, ended by pid.
      for (const pid of [...processesNaming(dir), ...processesNaming(`-namespace ${namespace} `)]) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone already.
        }
      }
      for (const mount of mountsUnder(dir).reverse()) {
        try {
          execFileSync("umount", ["-l", mount], { stdio: "ignore" });
        } catch {
          // Unmounted with its parent.
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return engine;
}

/**
 * Resolves once the process named by `pidFile` (if any) has exited. A zombie nobody reaped yet has
 * exited too, but dockerd's check (signal 0) takes it for running: its pid file goes.
 */
async function gone(pidFile: string): Promise<void> {
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").trim()) : 0;
  if (!(pid > 0)) return;
  for (;;) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return;
    }
    if (/^\S+ \(.*\) Z/.test(stat)) {
      rmSync(pidFile, { force: true });
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Pids of processes whose command line (arguments joined by spaces) holds `text`; never this one. */
function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(text)) pids.push(pid);
    } catch {
      // Exited while listed.
    }
  }
  return pids;
}

/** Mount points at or below `dir`, parents first. */
function mountsUnder(dir: string): string[] {
  if (!existsSync("/proc/self/mounts")) return [];
  return readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "")
    .map((path) => path.replace(/\\040/g, " "))
    .filter((path) => path === dir || path.startsWith(`${dir}/`));
}
