/**
 * What the batch's warm pool costs while its containers wait for their tasks: N containers made
 * ahead (warm/warm-container.ts, as `harness batch` makes them), then, once they settled, each one's
 * memory as its cgroup counts it (PID 1's shell and its sleep) and the engine's own process for it
 * (containerd's shim, its proportional set size, read from /proc on a local engine). Every container
 * is removed afterwards.
 */
import { readdirSync, readFileSync } from "node:fs";
import Docker from "dockerode";
import { type WarmContainer, warmContainer } from "../src/sandbox/docker/warm/warm-container.js";
import { makeWorkspace } from "../test/support/workspace.js";

const MIB = 1024 ** 2;

/** The PSS (MiB) of the containerd shim serving container `id`, or undefined (remote engine, other runtime). */
function shimPssMiB(id: string): number | undefined {
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (!args[0]?.includes("containerd-shim") || args[args.indexOf("-id") + 1] !== id) continue;
      const pss = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1];
      return pss === undefined ? undefined : Number(pss) / 1024;
    } catch {
      // Gone, or not ours to read.
    }
  }
  return undefined;
}

/** The container's memory as its cgroup counts it, less the page cache (as `docker stats` shows it). */
async function cgroupMiB(docker: Docker, id: string): Promise<number> {
  const stats = (await docker.getContainer(id).stats({ stream: false })) as {
    memory_stats?: { usage?: number; stats?: { inactive_file?: number; total_inactive_file?: number } };
  };
  const m = stats.memory_stats ?? {};
  const cache = m.stats?.inactive_file ?? m.stats?.total_inactive_file ?? 0;
  return ((m.usage ?? 0) - cache) / MIB;
}

export async function measureWarmIdle(n: number): Promise<string> {
  const docker = new Docker();
  const workspaces = Array.from({ length: n }, () => makeWorkspace("harness-warm-idle-"));
  const warmed: WarmContainer[] = [];
  try {
    for (const ws of workspaces) {
      const warm = await warmContainer({ workspace: ws.path }, "bench-warm-idle");
      if (warm) warmed.push(warm);
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const own = await Promise.all(warmed.map((w) => cgroupMiB(docker, w.id)));
    const shims = warmed.map((w) => shimPssMiB(w.id)).filter((x): x is number => x !== undefined);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const shim = shims.length > 0 ? `${mean(shims).toFixed(1)} MiB` : "not measurable here";
    return `Warm pool while idle (${warmed.length} containers waiting): ${mean(own).toFixed(1)} MiB each inside the container (cgroup, without page cache), plus the engine's shim for it: ${shim} (PSS).`;
  } finally {
    for (const w of warmed) await w.discard();
    for (const ws of workspaces) ws[Symbol.dispose]();
  }
}
