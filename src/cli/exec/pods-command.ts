/**
 * `harness ps` and `harness rm` with `--engine kubernetes`: harness's pods in the namespace, and the
 * pods it claimed from warm pools (--kube-warm-pool), which rm releases with their claim.
 */
import { realpath } from "node:fs/promises";
import { type CliFlags, loadSandboxConfig, type SandboxEngine } from "../../config.js";
import { ConfigError } from "../../errors.js";
import { listHarnessClaims, releaseHarnessClaims } from "../../sandbox/kubernetes/claim/claim-registry.js";
import {
  connectCluster,
  listHarnessPods,
  removeHarnessPods,
} from "../../sandbox/kubernetes/pod/pod-registry.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";

/** The engine flags and env name (HARNESS_ENGINE), checked as every command checks it. */
export function engineOf(flags: CliFlags): SandboxEngine {
  return loadSandboxConfig(process.env, flags.engine === undefined ? {} : { engine: flags.engine }).engine;
}

export async function podsCommand(flags: CliFlags & { all?: boolean }, action: "ps" | "rm"): Promise<number> {
  const config = loadSandboxConfig(process.env, flags);
  const cluster = connectCluster({ kubeContext: config.kubeContext, namespace: config.namespace });
  // Names, images and the workspace annotation are anyone's to set who may create pods: shown, never obeyed.
  const cell = (text: string) => sanitizeForTerminal(text, { oneLine: true });
  if (action === "ps") {
    const pods = await listHarnessPods(cluster);
    const claims = await listHarnessClaims(cluster);
    if (pods.length + claims.length === 0) {
      process.stdout.write(`no harness pods in namespace ${cell(cluster.namespace)}\n`);
      return 0;
    }
    const rows = [
      ["POD", "STATUS", "IMAGE", "WORKSPACE"],
      ...pods.map((p) => [p.name, p.status, p.image, p.workspace].map(cell)),
      ...claims.map((c) =>
        [c.pod ?? "-", `${c.status}, claimed from ${c.pool} (${c.claim})`, c.image, c.workspace].map(cell),
      ),
    ];
    const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
    for (const row of rows) {
      process.stdout.write(
        `${row.map((c, i) => (i < row.length - 1 ? c.padEnd(widths[i] ?? 0) : c)).join("  ")}\n`,
      );
    }
    return 0;
  }
  let workspace: string | undefined;
  if (!flags.all) {
    const given = flags.workspace ?? process.cwd();
    workspace = await realpath(given).catch(() => {
      throw new ConfigError(`workspace '${given}' does not exist (use --all to remove every harness pod)`);
    });
  }
  const removed = await removeHarnessPods(cluster, await listHarnessPods(cluster, workspace));
  for (const p of removed)
    process.stdout.write(`${cell(`removed pod ${p.namespace}/${p.name} (${p.workspace})`)}\n`);
  const released = await releaseHarnessClaims(cluster, await listHarnessClaims(cluster, workspace));
  for (const c of released) {
    const what = `released claim ${cluster.namespace}/${c.claim} on the warm pool ${c.pool} with its pod ${c.pod ?? "(none yet)"} (${c.workspace})`;
    process.stdout.write(`${cell(what)}\n`);
  }
  if (removed.length + released.length === 0) process.stdout.write("nothing to remove\n");
  return 0;
}
