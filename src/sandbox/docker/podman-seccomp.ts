/**
 * Podman's Docker-compatible API reads `seccomp=` in SecurityOpt as a file path, where Docker takes
 * the profile itself ("opening seccomp profile failed: open {...}: file name too long"). For Podman
 * harness writes the same profile to a file named by its hash in its state directory and passes
 * that path: the profile stays exactly Docker's plus the set-id rules (seccomp-profile.ts), and a
 * changed profile is a changed path, so the container's config hash changes as it does on Docker.
 * The path is on this machine: an engine elsewhere cannot open it (the create fails naming it).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { harnessStateDir } from "../host/state-dir.js";
import { SANDBOX_SECCOMP_PROFILE } from "./seccomp-profile.js";

/** Writes the profile once (atomically) and returns its path. */
export function podmanSeccompProfilePath(env: NodeJS.ProcessEnv = process.env): string {
  const hash = createHash("sha256").update(SANDBOX_SECCOMP_PROFILE).digest("hex").slice(0, 16);
  const dir = join(harnessStateDir(env), "seccomp");
  const path = join(dir, `sandbox-${hash}.json`);
  if (existsSync(path) && readFileSync(path, "utf8") === SANDBOX_SECCOMP_PROFILE) return path;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, SANDBOX_SECCOMP_PROFILE, { mode: 0o644 });
  renameSync(temp, path);
  return path;
}
