/**
 * Podman's Docker-compatible API reads `seccomp=` in SecurityOpt as a file path, where Docker takes
 * the profile itself ("opening seccomp profile failed: open {...}: file name too long"). For Podman
 * harness writes the same profile to a file named by its hash in its state directory and passes
 * that path: the profile stays exactly Docker's plus the set-id rules (seccomp-profile.ts), and a
 * changed profile is a changed path, so the container's config hash changes as it does on Docker.
 * The path is on this machine: an engine elsewhere cannot open it (the create fails naming it).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { openHostFile } from "../../../host-files/host-file.js";
import { openHostDir } from "../../../host-files/host-path.js";
import { harnessStateDir } from "../../../state/state-dir.js";
import { SANDBOX_SECCOMP_PROFILE } from "./seccomp-profile.js";

/** Writes the profile once (atomically) and returns its path. */
export function podmanSeccompProfilePath(env: NodeJS.ProcessEnv = process.env): string {
  const hash = createHash("sha256").update(SANDBOX_SECCOMP_PROFILE).digest("hex").slice(0, 16);
  const dir = join(harnessStateDir(env), "seccomp");
  const path = join(dir, `sandbox-${hash}.json`);
  if (existsSync(path) && readFileSync(path, "utf8") === SANDBOX_SECCOMP_PROFILE) return path;
  // Written through the directory held open, never a link at any name in it (host-files/).
  const held = openHostDir(dir, 0o700);
  try {
    const temp = `sandbox-${hash}.json.${process.pid}.tmp`;
    rmSync(held.at(temp), { force: true });
    const file = openHostFile(held, temp, { mode: 0o644, exclusive: true });
    try {
      file.write(SANDBOX_SECCOMP_PROFILE);
    } finally {
      file.close();
    }
    renameSync(held.at(temp), held.at(basename(path)));
  } finally {
    held.close();
  }
  return path;
}
