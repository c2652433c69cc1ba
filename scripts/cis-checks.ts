/**
 * The container-runtime checks of the CIS Docker Benchmark (section 5, numbered as in v1.2.0/v1.3.x,
 * which docker-bench-security's `tests/5_container_runtime.sh` implements), plus 4.1, evaluated from
 * what the Engine API reports about one container. docker-bench-security itself is not used: it has
 * to be downloaded, and this machine has no internet. Used by scripts/cis-check.ts and a test.
 */
import type Docker from "dockerode";
import type { CisInput, CisResult } from "./cis/cis-types.js";
import { ISOLATION_CHECKS } from "./cis/isolation-checks.js";
import { LIMIT_CHECKS } from "./cis/limit-checks.js";
import { PRIVILEGE_CHECKS } from "./cis/privilege-checks.js";

export type { CisInput, CisResult, CisStatus } from "./cis/cis-types.js";

function order(id: string): number {
  const [major = 0, minor = 0] = id.split(".").map(Number);
  return major * 1000 + minor;
}

/** Every check, in benchmark order. */
export function evaluateCis(input: CisInput): CisResult[] {
  return [...PRIVILEGE_CHECKS, ...ISOLATION_CHECKS, ...LIMIT_CHECKS]
    .sort((a, b) => order(a.id) - order(b.id))
    .map(({ id, title, run }) => {
      const [status, detail] = run(input);
      return { id, title, status, detail };
    });
}

/** A Markdown table, as recorded in docs/security.md. */
export function formatCisTable(results: readonly CisResult[]): string {
  const rows = results.map(
    (r) => `| ${r.id} | ${r.status} | ${r.title} | ${r.detail.replaceAll("|", "\\|")} |`,
  );
  return ["| check | result | recommendation | seen |", "|---|---|---|---|", ...rows].join("\n");
}

/**
 * Reads what the checks need from the engine. `execCommand` must start a command in the container
 * and resolve when it ends: Docker lists only running execs, so one is inspected while it runs.
 */
export async function collectCisInput(
  docker: Docker,
  containerId: string,
  execCommand: (command: string) => Promise<unknown>,
): Promise<CisInput> {
  const container = docker.getContainer(containerId);
  const running = execCommand("sleep 2");
  let execIds: string[] = [];
  for (let i = 0; i < 50 && execIds.length === 0; i++) {
    execIds = (await container.inspect()).ExecIDs ?? [];
    if (execIds.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const execs = await Promise.all(
    execIds.map(async (id) => {
      const info = await docker.getExec(id).inspect();
      const { user, privileged, entrypoint, arguments: args } = info.ProcessConfig;
      return { user, privileged, command: [entrypoint, ...(args ?? [])].join(" ") };
    }),
  );
  const [info, engine, top] = await Promise.all([container.inspect(), docker.info(), container.top()]);
  await running;
  const cmdColumn = (top.Titles as string[]).indexOf("CMD");
  return {
    container: info,
    engineSecurityOptions: (engine as { SecurityOptions?: string[] }).SecurityOptions ?? [],
    processes: (top.Processes as string[][]).map((row) => row[cmdColumn] ?? row.join(" ")),
    execs,
  };
}
