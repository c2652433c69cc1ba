/**
 * A hostile process on the host for copy mode's race tests: it swaps a workspace directory for a
 * symlink to a directory outside the workspace and back, in a tight loop, in its own process (so it
 * really runs beside the code under test on another core), bounded in time and in swaps.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { lstatSync, renameSync, rmSync, unlinkSync } from "node:fs";

// Plain CommonJS for `node -e`: rename the directory away, put the link in its place, take it away
// again, put the directory back. Every step may fail (the code under test moves things too); a
// directory the code under test created at the path meanwhile is moved aside, so the loop goes on.
const LOOP = `
const fs = require("node:fs");
const [path, target, maxMs, maxSwaps] = process.argv.slice(1);
const hidden = path + ".real";
const deadline = Date.now() + Number(maxMs);
let swaps = 0;
const aside = () => { try { fs.renameSync(path, path + ".stray-" + swaps); } catch {} };
process.stdout.write("ready\\n");
while (swaps < Number(maxSwaps) && (swaps % 64 !== 0 || Date.now() < deadline)) {
  try { fs.renameSync(path, hidden); } catch (e) { if (e.code === "ENOTEMPTY" || e.code === "EEXIST") aside(); }
  try { fs.symlinkSync(target, path); } catch {}
  try { fs.unlinkSync(path); } catch {}
  try { fs.renameSync(hidden, path); } catch (e) {
    if (e.code === "ENOTEMPTY" || e.code === "EEXIST") { aside(); try { fs.renameSync(hidden, path); } catch {} }
  }
  swaps++;
}
`;

export interface SwapRacer {
  /** Kills the racer and puts the directory back where it was (or leaves what the code made there). */
  stop(): Promise<void>;
}

/** Starts swapping `path` with a symlink to `target`; resolves once the loop runs. */
export async function startSwapRacer(
  path: string,
  target: string,
  limits = { maxMs: 10_000, maxSwaps: 5_000_000 },
): Promise<SwapRacer> {
  const child: ChildProcess = spawn(
    process.execPath,
    ["-e", LOOP, path, target, String(limits.maxMs), String(limits.maxSwaps)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const [first] = (await once(child.stdout as NodeJS.ReadableStream, "data")) as [Buffer];
  if (!first.toString().startsWith("ready")) throw new Error(`racer did not start: ${first.toString()}`);
  return {
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, "exit");
        child.kill("SIGKILL");
        await exited;
      }
      const hidden = `${path}.real`;
      if (lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) unlinkSync(path);
      if (lstatSync(hidden, { throwIfNoEntry: false })) {
        rmSync(path, { recursive: true, force: true });
        renameSync(hidden, path);
      }
    },
  };
}
