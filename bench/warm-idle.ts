/**
 * What the batch's warm pool costs while its containers wait for their tasks: N containers made
 * ahead (warm/warm-container.ts, as `harness batch` makes them), then host memory in use above the
 * baseline (the engine's shims included) and each container's own memory as its cgroup counts it,
 * averaged over a few samples once they settled. Every container is removed afterwards.
 */
import { freemem, totalmem } from "node:os";
import Docker from "dockerode";
import { type WarmContainer, warmContainer } from "../src/sandbox/docker/warm/warm-container.js";
import { makeWorkspace } from "../test/support/workspace.js";

const MIB = 1024 ** 2;

async function hostInUse(samples = 5): Promise<number> {
  let sum = 0;
  for (let i = 0; i < samples; i++) {
    sum += totalmem() - freemem();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return sum / samples;
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
    const before = await hostInUse();
    for (const ws of workspaces) {
      const warm = await warmContainer({ workspace: ws.path }, "bench-warm-idle");
      if (warm) warmed.push(warm);
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const after = await hostInUse();
    const own = await Promise.all(warmed.map((w) => cgroupMiB(docker, w.id)));
    const perHost = (after - before) / warmed.length / MIB;
    const perOwn = own.reduce((a, b) => a + b, 0) / own.length;
    return `Warm pool while idle: ${warmed.length} containers waiting cost ${perHost.toFixed(1)} MiB of host memory each (engine shims included; host-wide, so noisy), ${perOwn.toFixed(1)} MiB each inside their cgroups.`;
  } finally {
    for (const w of warmed) await w.discard();
    for (const ws of workspaces) ws[Symbol.dispose]();
  }
}
