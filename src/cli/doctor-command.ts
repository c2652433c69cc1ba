/**
 * `harness doctor`: whether harness can run here, one line per check (ok, warn or fail, and what to
 * do), as text or JSON. Exit 0 when harness can run (warnings allowed), 1 when a check failed.
 */
import { stat } from "node:fs/promises";
import { type CliFlags, loadSandboxConfig, type SandboxConfig } from "../config.js";
import { connectEngine } from "../sandbox/docker/engine/docker-client.js";
import { engineChecks, inspectEngine } from "../sandbox/docker/engine-doctor.js";
import { packageCacheCheck } from "../sandbox/docker/package-cache/package-cache-doctor.js";
import type { DoctorCheck } from "../sandbox/doctor-check.js";
import { freeDiskCheck, workspaceCheck } from "../sandbox/host/host-doctor.js";
import { SANDBOX_DEFAULTS } from "../sandbox/sandbox-request.js";
import { parseUserIds } from "../sandbox/sandbox-user.js";
import { harnessStateDir } from "../state/state-dir.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { EXIT } from "./exit-codes.js";

/** "ok   engine: detail (fix: …)", the status padded so the names line up. */
export function formatCheck(check: DoctorCheck): string {
  const fix = check.fix ? ` (fix: ${check.fix})` : "";
  // Details quote the engine and the workspace (paths, names, error messages): shown, never obeyed.
  return sanitizeForTerminal(`${check.status.padEnd(4)} ${check.name}: ${check.detail}${fix}`, {
    oneLine: true,
  });
}

export function doctorExitCode(checks: readonly DoctorCheck[]): number {
  return checks.some((c) => c.status === "fail") ? EXIT.error : EXIT.ok;
}

/** Every check, in the order printed: the engine's, then the host's. */
export async function runDoctorChecks(flags: CliFlags, env: NodeJS.ProcessEnv): Promise<DoctorCheck[]> {
  const sandbox = loadSandboxConfig(env, flags);
  if (sandbox.engine === "kubernetes") return kubernetesDoctor(sandbox, env);
  const network = sandbox.network ?? SANDBOX_DEFAULTS.network;
  const engine = await inspectEngine(env, flags.context, sandbox.image);
  const checks: DoctorCheck[] = [];
  if ("unreachable" in engine) {
    // The connection error already says what to do (start the engine, or point DOCKER_HOST at it).
    checks.push(engine.unreachable);
  } else {
    checks.push(...engineChecks(engine.facts, { runtime: sandbox.runtime, network }));
    const { docker } = await connectEngine(env, flags.context);
    // The cache of the user the sandbox would run as: --user, or the workspace's owner.
    const uid = sandbox.user
      ? parseUserIds(sandbox.user).uid
      : await stat(sandbox.workspace).then(
          (s) => s.uid,
          () => undefined,
        );
    const maxBytes = sandbox.packageCache?.maxBytes ?? SANDBOX_DEFAULTS.packageCacheMaxBytes;
    checks.push(await packageCacheCheck(docker, maxBytes, uid));
    const root = engine.facts.info.DockerRootDir;
    if (root && !engine.facts.remote) {
      const disk = await freeDiskCheck("engine disk", root);
      if (disk) checks.push(disk);
    }
  }
  checks.push(await workspaceCheck(sandbox.workspace, sandbox.user));
  const state = await freeDiskCheck("state dir disk", harnessStateDir(env));
  if (state) checks.push(state);
  return checks;
}

/** The cluster's checks, then the host's (the workspace is still copied from here). */
async function kubernetesDoctor(sandbox: SandboxConfig, env: NodeJS.ProcessEnv): Promise<DoctorCheck[]> {
  // Loaded only here: the Kubernetes client costs Docker's doctor about 0.3 s.
  const [{ kubernetesChecks }, { defaultPodImage }] = await Promise.all([
    import("../sandbox/kubernetes/kubernetes-doctor.js"),
    import("../sandbox/kubernetes/kubernetes-sandbox.js"),
  ]);
  const checks = await kubernetesChecks({
    kubeContext: sandbox.kubeContext,
    namespace: sandbox.namespace,
    image: sandbox.image ?? defaultPodImage(),
    runtime: sandbox.runtime,
    sandbox,
  });
  checks.push(await workspaceCheck(sandbox.workspace, sandbox.user));
  const state = await freeDiskCheck("state dir disk", harnessStateDir(env));
  if (state) checks.push(state);
  return checks;
}

export async function doctorCommand(flags: CliFlags & { outputFormat?: string }): Promise<number> {
  const checks = await runDoctorChecks(flags, process.env);
  if (flags.outputFormat === "json") {
    process.stdout.write(`${JSON.stringify({ ok: doctorExitCode(checks) === EXIT.ok, checks }, null, 2)}\n`);
  } else {
    for (const check of checks) process.stdout.write(`${formatCheck(check)}\n`);
  }
  return doctorExitCode(checks);
}
