/**
 * The memory of one system while it works (the flood), every process it runs, client and server:
 * - client: its driver process and every descendant on the host (the `docker` CLI processes that mini
 *   and SWE-ReX start, …);
 * - server: for each container it created (its record, re-read at each sample): the container's
 *   containerd shim and everything below it (the container's processes, `docker exec`s included: a
 *   server like SWE-ReX's, harness's executor), and any docker-proxy publishing the container's ports.
 * Resident set sizes, summed (a page shared by two processes counts twice, for every system alike),
 * sampled every `intervalMs`. Not counted: the engine itself (dockerd, containerd), shared by every
 * system and every user of the machine. Linux only (/proc).
 */
import { readdirSync, readFileSync } from "node:fs";
import type Docker from "dockerode";
import { readRecord } from "./created-record.js";

const PAGE = 4096;

function read(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function rssBytes(pid: number): number {
  const statm = read(`/proc/${pid}/statm`);
  return statm === undefined ? 0 : Number(statm.split(" ")[1] ?? 0) * PAGE;
}

function parentOf(pid: number): number | undefined {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

/** `pid` and all its descendants (children of every thread). */
export function processTree(pid: number): number[] {
  const found = [pid];
  for (let i = 0; i < found.length; i++) {
    const tasks = (() => {
      try {
        return readdirSync(`/proc/${found[i]}/task`);
      } catch {
        return [];
      }
    })();
    for (const tid of tasks) {
      for (const child of (read(`/proc/${found[i]}/task/${tid}/children`) ?? "").split(" ")) {
        if (child.trim() !== "") found.push(Number(child));
      }
    }
  }
  return found;
}

function treeRss(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + rssBytes(p), 0);
}

export interface MemoryPeak {
  /** Peak of the client processes' sum, in MB. */
  clientMB: number;
  /** Peak of the server processes' sum, in MB. */
  serverMB: number;
  /** Peak of the two together (sampled at the same moment), in MB. */
  totalMB: number;
  samples: number;
}

interface ServerSide {
  shim: number | undefined;
  ips: string[];
}

export class MemorySampler {
  private readonly containers = new Map<string, Promise<ServerSide>>();
  private proxies: number[] = [];
  private peak = { client: 0, server: 0, total: 0 };
  private samples = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly docker: Docker,
    private readonly clientPid: number,
    private readonly recordDir: string,
  ) {}

  private serverSide(id: string): Promise<ServerSide> {
    let side = this.containers.get(id);
    if (!side) {
      side = this.docker
        .getContainer(id)
        .inspect()
        .then((info) => ({
          shim: info.State.Pid > 0 ? parentOf(info.State.Pid) : undefined,
          ips: Object.values(info.NetworkSettings.Networks ?? {})
            .map((n) => n.IPAddress)
            .filter((ip) => ip !== ""),
        }))
        .catch(() => ({ shim: undefined, ips: [] }));
      // Not started yet (no pid): asked again at the next sample.
      void side.then((s) => {
        if (s.shim === undefined) this.containers.delete(id);
      });
      this.containers.set(id, side);
    }
    return side;
  }

  private findProxies(ips: readonly string[]): number[] {
    if (ips.length === 0) return [];
    return readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name) && read(`/proc/${name}/comm`)?.trim() === "docker-proxy")
      .filter((name) => {
        const args = (read(`/proc/${name}/cmdline`) ?? "").split("\0");
        return ips.includes(args[args.indexOf("-container-ip") + 1] ?? "");
      })
      .map(Number);
  }

  private async sample(): Promise<void> {
    const client = treeRss(this.clientPid);
    const ids = readRecord(this.recordDir).filter((c) => c.kind === "container");
    const sides = await Promise.all(ids.map((c) => this.serverSide(c.id)));
    if (this.samples % 10 === 0) this.proxies = this.findProxies(sides.flatMap((s) => s.ips));
    let server = this.proxies.reduce((sum, p) => sum + rssBytes(p), 0);
    for (const side of sides) if (side.shim !== undefined) server += treeRss(side.shim);
    this.samples += 1;
    this.peak.client = Math.max(this.peak.client, client);
    this.peak.server = Math.max(this.peak.server, server);
    this.peak.total = Math.max(this.peak.total, client + server);
  }

  start(intervalMs = 100): void {
    const tick = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => void this.sample().finally(tick), intervalMs);
    };
    void this.sample().finally(tick);
  }

  async stop(): Promise<MemoryPeak> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.sample();
    const mb = (bytes: number) => Math.round(bytes / 1_048_576);
    return {
      clientMB: mb(this.peak.client),
      serverMB: mb(this.peak.server),
      totalMB: mb(this.peak.total),
      samples: this.samples,
    };
  }
}
