/** Types and small helpers shared by the CIS check lists (scripts/cis-checks.ts runs them). */
import type Docker from "dockerode";

export type CisStatus = "PASS" | "FAIL" | "N/A";

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
  execs: { user: string; privileged: boolean }[];
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
