/** Types and small helpers shared by the CIS check lists (scripts/cis-checks.ts runs them). */
import type Docker from "dockerode";

/**
 * DEVIATION: the recommendation is not met as worded, on purpose, for a reason the check states and
 * verifies (harness's machinery runs as root with SETUID and SETGID only; docs/security.md).
 */
export type CisStatus = "PASS" | "FAIL" | "N/A" | "DEVIATION";

export interface CisResult {
  /** Recommendation number, e.g. "5.12". */
  id: string;
  /** The recommendation, shortened. */
  title: string;
  status: CisStatus;
  /** What was seen, or why the check does not apply. */
  detail: string;
}

/** Everything the checks look at; all of it comes from the Engine API. */
export interface CisInput {
  /** `docker inspect` of the container. */
  container: Docker.ContainerInspectInfo;
  /** `docker info` SecurityOptions, e.g. ["name=seccomp,profile=default"]. */
  engineSecurityOptions: string[];
  /** Command lines of the container's processes (`docker top`). */
  processes: string[];
  /** Execs that were running when the container was inspected (Docker lists only running ones). */
  execs: { user: string; privileged: boolean; command: string }[];
}

export type Verdict = [CisStatus, string];

/** One recommendation and how to judge it. */
export interface CisCheck {
  id: string;
  title: string;
  run: (input: CisInput) => Verdict;
}

export const pass = (detail: string): Verdict => ["PASS", detail];
export const fail = (detail: string): Verdict => ["FAIL", detail];
export const na = (detail: string): Verdict => ["N/A", detail];
export const deviation = (detail: string): Verdict => ["DEVIATION", detail];

/**
 * The capabilities harness's machinery keeps (src/sandbox/docker/container/container-spec.ts MACHINERY_CAPS):
 * enough to drop to the workspace owner, nothing more. Named here again because a check must not
 * take its standard from the code it checks.
 */
export const MACHINERY_CAPS = ["SETUID", "SETGID"];

/** harness's in-container programs that run as root (the executor, the allowlist relay). */
export const MACHINERY_EXEC =
  /^python3 -I -S -c .* harness-executor \d+:\d+ HARNESS_EXEC$|^\/bin\/sh -c .* harness-egress-relay /s;

/**
 * Whether the container's root is harness's machinery and nothing more: no capability beyond
 * MACHINERY_CAPS after dropping all, no_new_privs, not privileged.
 */
export function machineryRoot(c: Docker.ContainerInspectInfo): boolean {
  const add = (c.HostConfig.CapAdd as string[] | null) ?? [];
  const drop = (c.HostConfig.CapDrop as string[] | null) ?? [];
  return (
    drop.includes("ALL") &&
    add.every((cap) => MACHINERY_CAPS.includes(cap.replace(/^CAP_/, ""))) &&
    securityOpts(c).some((o) => /^no-new-privileges([:=]true)?$/.test(o)) &&
    !c.HostConfig.Privileged
  );
}
export const when = (ok: boolean, good: string, bad: string): Verdict => (ok ? pass(good) : fail(bad));

/** uid 0 in any spelling Docker accepts: "root", "0", "00:1000", or 4294967296 (0 as a 32-bit uid_t). */
export function isRoot(user: string): boolean {
  const uid = user.split(":")[0] ?? "";
  return uid === "root" || (/^[0-9]+$/.test(uid) && BigInt(uid) % 2n ** 32n === 0n);
}

export function securityOpts(c: Docker.ContainerInspectInfo): string[] {
  return (c.HostConfig.SecurityOpt as string[] | null) ?? [];
}

export function publishedPorts(c: Docker.ContainerInspectInfo): { hostIp: string; hostPort: number }[] {
  return Object.values(c.NetworkSettings.Ports ?? {}).flatMap((bindings) =>
    (bindings ?? []).map((b) => ({ hostIp: b.HostIp, hostPort: Number(b.HostPort) })),
  );
}

/** The namespace checks: sharing the host's is the failure. */
export function notHost(name: string, value: string | undefined): Verdict {
  return when(value !== "host", `${name} '${value || "private"}'`, `${name} is 'host'`);
}
