/**
 * Writes harness's seccomp profile (src/sandbox/docker/container/seccomp-profile.ts) to docker/sandbox-seccomp.json,
 * for docker-compose.yml's `sandbox` service: compose reads a profile from a file, harness passes
 * the same JSON through the Engine API. test/unit/compose/compose-file.test.ts fails when the file
 * is stale; then run:
 *
 *   node --import tsx scripts/write-seccomp-profile.ts
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildSandboxSeccompProfile } from "../src/sandbox/docker/container/seccomp-profile.js";

const target = fileURLToPath(new URL("../docker/sandbox-seccomp.json", import.meta.url));
writeFileSync(target, `${JSON.stringify(buildSandboxSeccompProfile(), null, 2)}\n`);
// In the repository's own format, so `npm run check` stays clean.
execFileSync("npx", ["biome", "format", "--write", target], { stdio: "ignore" });
process.stdout.write(`wrote ${target}\n`);
