import { formatBytes } from "../text/units.js";
/** One line of `harness doctor`: what was checked, how it stands, and what to do about it. */
export type CheckStatus = "ok" | "warn" | "fail";

export interface DoctorCheck {
  /** Short name of what was checked: "engine", "cgroup", "runtime runsc", "workspace", … */
  name: string;
  /** ok: fine; warn: harness runs, with a limit worth knowing; fail: harness cannot run. */
  status: CheckStatus;
  /** What was found, in one line. */
  detail: string;
  /** What to do about a warn or fail, in one line; absent when there is nothing to do. */
  fix?: string | undefined;
}

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

/** Free space of one directory: fail below 100 MiB (a run cannot write its state), warn below 2 GiB. */
export function diskCheck(name: string, path: string, freeBytes: number): DoctorCheck {
  const detail = `${formatBytes(freeBytes)} free at ${path}`;
  if (freeBytes < 100 * MIB)
    return { name, status: "fail", detail, fix: `free space on the disk that holds ${path}` };
  if (freeBytes < 2 * GIB)
    return { name, status: "warn", detail, fix: `free space on the disk that holds ${path}` };
  return { name, status: "ok", detail };
}
