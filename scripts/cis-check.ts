/**
 * Opens a sandbox with harness's default settings on a throwaway workspace (with a `.git`, so the
 * protective mounts are there too), runs the CIS Docker Benchmark container checks against it,
 * prints PASS / FAIL / N/A per check and exits non-zero on any FAIL.
 *
 *   node --import tsx scripts/cis-check.ts
 */
import { chownSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { connectDocker } from "../src/sandbox/docker/engine/docker-client.js";
import { collectCisInput, evaluateCis, formatCisTable } from "./cis-checks.js";

const workspace = mkdtempSync(join(tmpdir(), "harness-cis-"));
try {
  mkdirSync(join(workspace, ".git"));
  // Root owns a fresh temp dir when this runs as root, and harness never runs commands as root.
  if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
  const docker = await connectDocker();
  await using sandbox = await DockerSandbox.open({ workspace, removeOnStop: true, onProgress: () => {} });
  const input = await collectCisInput(docker, sandbox.containerId, (command) => sandbox.exec(command));
  const results = evaluateCis(input);
  process.stdout.write(`${formatCisTable(results)}\n`);
  const count = (status: string) => results.filter((r) => r.status === status).length;
  process.stdout.write(
    `\n${results.length} checks: ${count("PASS")} PASS, ${count("FAIL")} FAIL, ${count("N/A")} N/A, ${count("DEVIATION")} DEVIATION\n`,
  );
  if (count("FAIL") > 0) process.exitCode = 1;
} finally {
  rmSync(workspace, { recursive: true, force: true });
}
