/**
 * The peers' virtual environment for bench/peers-bench.ts: outside the repository, in
 * ~/.cache/harness-bench/peers-venv-<hash of the pinned versions>, made once with the host's python3
 * and pip from PyPI. A benchmark tool only: harness never imports or installs any of it.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** What the benchmark measures, pinned: a new version is a new environment. */
export const PEER_PACKAGES = [
  "mini-swe-agent==2.4.6",
  "llm-sandbox[docker]==0.3.46",
  "swe-rex==1.4.0",
  // Needs a shim for urllib3 2 (peer_systems.py epicbox_urllib3_shim).
  "epicbox==1.1.0",
];

export function run(command: string, args: string[]): void {
  const r = spawnSync(command, args, { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} failed: ${r.stderr.trim().slice(-600)}`);
}

/** The environment's python3, made first if missing; progress lines go to `say`. */
export function peersPython(say: (line: string) => void): string {
  const key = createHash("sha256").update(PEER_PACKAGES.join("\n")).digest("hex").slice(0, 12);
  const root = process.env["XDG_CACHE_HOME"] ?? join(homedir(), ".cache");
  const dir = join(root, "harness-bench", `peers-venv-${key}`);
  const python = join(dir, "bin", "python");
  // Marked once complete: a failed install is made again from scratch. (Never renamed into place:
  // a venv's scripts name its own path.)
  const done = join(dir, ".complete");
  if (existsSync(done)) return python;
  say(`installing ${PEER_PACKAGES.join(", ")} into ${dir} (once)`);
  mkdirSync(join(root, "harness-bench"), { recursive: true });
  rmSync(dir, { recursive: true, force: true });
  run("python3", ["-m", "venv", dir]);
  run(join(dir, "bin", "pip"), ["install", "--quiet", ...PEER_PACKAGES]);
  writeFileSync(done, `${PEER_PACKAGES.join("\n")}\n`);
  return python;
}
