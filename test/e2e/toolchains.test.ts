/**
 * A newcomer's first task on projects nobody here wrote, through the built CLI and the default
 * sandbox image: each ecosystem's project (test/support/toolchain-projects.ts) is tested with its
 * own command in `harness exec`, its dependency fetched through the matching `--allow` preset with
 * no flag for the tool itself. The preset reads the host's configuration as it would for a company
 * mirror, here set in harness's environment or files to a registry stub on this host
 * (test/support/toolchain-registries.ts): npm, PyPI, the Go module proxy and a sparse cargo
 * registry serve fixtures built at test time; Maven's mirror fetches from Maven Central (Maven's
 * own plugins cannot be stubbed), which CI reaches. The C project needs no registry.
 * docs/toolchains.md shows these same commands; docs-examples.test.ts holds the two together.
 *
 * Each run has a sandbox uid of its own (the workspaces are chowned to it), so its package cache
 * volume, where the toolchains' caches go, is its own and removed at the end.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removePackageCacheVolumes } from "../../src/sandbox/docker/package-cache/package-cache-volume.js";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { chownTree, writeProject } from "../support/toolchain-projects.js";
import {
  type Ecosystem,
  startToolchainRegistries,
  type ToolchainRegistries,
} from "../support/toolchain-registries.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

/** This test run's sandbox user, and so its package cache volume's owner. */
const UID = 20_000 + ((process.pid + 7_919) % 20_000);

/** What each project leaves in its workspace: its own files and build output, no tool's cache. */
const LEFT_IN_WORKSPACE: Record<string, string[]> = {
  Node: ["index.js", "node_modules", "package-lock.json", "package.json", "test"],
  Python: [
    ".venv",
    "build",
    "fastadd.c",
    "fastadd.cpython-311-x86_64-linux-gnu.so",
    "fastadd.egg-info",
    "setup.py",
    "tests",
  ],
  Go: ["app.go", "app_test.go", "go.mod", "go.sum"],
  Rust: ["Cargo.lock", "Cargo.toml", "src", "target"],
  Java: ["pom.xml", "src", "target"],
  C: ["Makefile", "add.c", "add.h", "add.o", "libadd.a", "test", "test.c", "test.o"],
};

describe.skipIf(skipDocker)(
  "the default sandbox runs each ecosystem's own test command",
  { timeout: 900_000 },
  () => {
    const docker = new Docker();
    const scratch = mkdtempSync(join(tmpdir(), "harness-toolchains-"));
    let registries: ToolchainRegistries;

    beforeAll(async () => {
      registries = await startToolchainRegistries(scratch);
    });
    afterAll(async () => {
      await registries?.[Symbol.asyncDispose]();
      rmSync(scratch, { recursive: true, force: true });
      await removePackageCacheVolumes(docker, { uid: UID }).catch(() => {});
    });

    const ecosystem = (name: string): Ecosystem => {
      const found = registries.ecosystems.find((e) => e.name === name);
      if (found === undefined) throw new Error(`no ecosystem ${name}`);
      return found;
    };

    for (const name of ["Node", "Python", "Go", "Rust", "Java", "C"]) {
      it(`${name}: the project's own command, its dependency through the preset`, async () => {
        const { project, preset, env, fetched, origin } = ecosystem(name);
        const workspace = mkdtempSync(join(scratch, "ws-"));
        writeProject(workspace, project);
        chownTree(workspace, UID);
        const allow = preset === undefined ? [] : ["--allow", preset, "--allow-private"];
        try {
          const run = await runCli(
            ["exec", "--workspace", workspace, ...allow, "--timeout", "600", "--", project.command],
            { env, timeoutMs: 660_000 },
          );
          const output = `${run.stdout}\n${run.stderr}`;
          expect(run.code, output).toBe(0);
          expect(output).toMatch(project.passed);
          expect(run.stderr).not.toMatch(/network: refused/);
          if (fetched !== undefined) expect(origin?.requests.map((r) => r.url)).toContain(fetched);
          // The toolchains' caches are in the package cache volume or the home, never here.
          expect(readdirSync(workspace).sort()).toEqual(LEFT_IN_WORKSPACE[name]);
        } finally {
          await removeWorkspaceContainers(workspace);
        }
      });
    }
  },
);
