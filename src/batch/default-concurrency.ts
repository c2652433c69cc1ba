/**
 * `--concurrency`'s default, from this machine: one task per CPU core, and no more tasks than
 * 2 GiB of the host's memory each (a sandbox's default memory limit), at least 1. Tasks mostly wait
 * on the model, so cores are not the only limit; memory is what a full sandbox can really take.
 */
import { availableParallelism, totalmem } from "node:os";
import { SANDBOX_DEFAULTS } from "../sandbox/sandbox-request.js";

export interface MachineSize {
  /** CPU cores Node may use. */
  cores: number;
  /** Host memory, in bytes. */
  memoryBytes: number;
}

function machineSize(): MachineSize {
  return { cores: availableParallelism(), memoryBytes: totalmem() };
}

export function defaultConcurrency(machine: MachineSize = machineSize()): number {
  const byMemory = Math.floor(machine.memoryBytes / SANDBOX_DEFAULTS.memoryBytes);
  return Math.max(1, Math.min(machine.cores, byMemory));
}

/** The rule and this machine's value, for `harness batch --help`. */
export function describeDefaultConcurrency(machine: MachineSize = machineSize()): string {
  const gib = (machine.memoryBytes / 1024 ** 3).toFixed(0);
  return `min(CPU cores, host memory / 2 GiB), at least 1: ${defaultConcurrency(machine)} here (${machine.cores} cores, ${gib} GiB)`;
}
