/**
 * A newcomer's first task on projects nobody here wrote, through the built CLI and the default
 * sandbox image: each project (test/support/toolchain-projects.ts) is tested with its own command in
 * `harness exec`, its dependency fetched through the matching `--allow` preset, with no flag for the
 * tool itself. The preset reads the host's configuration as it would for a company mirror, here set
 * in harness's environment or files to a registry stub on this host (allowed as an IP literal with
 * `--allow-private`, as egress-cli.test.ts does): npm, PyPI, the Go module proxy and a sparse cargo
 * registry are stubs serving fixtures built at test time; Maven's mirror fetches from Maven Central
 * (Maven's own plugins cannot be stubbed), which CI reaches. The C project needs no registry.
 *
 * The stubs listen on one of the host's own non-loopback addresses, not on 127.0.0.2: Go's and
 * Java's HTTP clients never send a loopback address to a proxy (they would connect to the
 * sandbox's own loopback), and a real registry is never on loopback. For the minutes the tests
 * run, hosts that reach that address can fetch the fixtures too (and Central's files through the
 * Maven mirror).
 *
 * Each run has a sandbox uid of its own (the workspaces are chowned to it), so its package cache
 * volume, where Go's, cargo's and Maven's caches go, is its own and removed at the end.
 */
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageCacheVolumeName } from "../../src/sandbox/docker/package-cache/package-cache-volume.js";
import { skipDocker } from "../support/docker-available.js";
import { type CargoRegistryStub, startCargoRegistryStub } from "../support/egress/cargo-registry-stub.js";
import { GO_FIXTURE_MODULE, type GoProxyStub, startGoProxyStub } from "../support/egress/go-proxy-stub.js";
import { type MavenMirrorStub, startMavenMirrorStub } from "../support/egress/maven-mirror-stub.js";
import { type NpmRegistryStub, startNpmRegistryStub } from "../support/egress/npm-registry-stub.js";
import { type PipIndexStub, startPipIndexStub } from "../support/egress/pip-index-stub.js";
import { runCli } from "../support/run-cli.js";
import {
  cProject,
  goProject,
  mavenProject,
  nodeProject,
  type Project,
  pythonProject,
  rustProject,
  writeProject,
} from "../support/toolchain-projects.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

/** The host's first IPv4 address that is not loopback (see above). */
function hostAddress(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && i.family === "IPv4" && !i.internal);
  if (found === undefined) throw new Error("the host has no IPv4 address other than loopback for the stubs");
  return found.address;
}

const REGISTRY_IP = hostAddress();
/** This test run's sandbox user, and so its package cache volume's owner. */
const UID = 20_000 + ((process.pid + 7_919) % 20_000);

function chownTree(path: string): void {
  chownSync(path, UID, UID);
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) chownTree(child);
    else chownSync(child, UID, UID);
  }
}

describe.skipIf(skipDocker)(
  "the default sandbox runs each ecosystem's own test command",
  { timeout: 900_000 },
  () => {
    const docker = new Docker();
    const scratch = mkdtempSync(join(tmpdir(), "harness-toolchains-"));
    let npm: NpmRegistryStub;
    let pip: PipIndexStub;
    let go: GoProxyStub;
    let cargo: CargoRegistryStub;
    let maven: MavenMirrorStub;

    beforeAll(async () => {
      [npm, pip, go, cargo, maven] = await Promise.all([
        startNpmRegistryStub(REGISTRY_IP, { address: REGISTRY_IP }),
        startPipIndexStub(REGISTRY_IP, { address: REGISTRY_IP }),
        startGoProxyStub(REGISTRY_IP, REGISTRY_IP),
        startCargoRegistryStub(REGISTRY_IP, REGISTRY_IP),
        startMavenMirrorStub(REGISTRY_IP, REGISTRY_IP),
      ]);
    });
    afterAll(async () => {
      await Promise.all([npm, pip, go, cargo, maven].map((stub) => stub?.close()));
      rmSync(scratch, { recursive: true, force: true });
      await docker
        .getVolume(packageCacheVolumeName(UID))
        .remove()
        .catch(() => {});
    });

    /**
     * `harness exec` of the project's command in a fresh workspace with `--allow PRESET`, the host's
     * configuration given by `env`; resolves the workspace and the CLI's output.
     */
    async function testProject(
      project: Project,
      preset: string | undefined,
      env: Record<string, string> = {},
    ): Promise<{ workspace: string; stdout: string; stderr: string }> {
      const workspace = mkdtempSync(join(scratch, "ws-"));
      writeProject(workspace, project);
      chownTree(workspace);
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
        return { workspace, stdout: run.stdout, stderr: run.stderr };
      } finally {
        await removeWorkspaceContainers(workspace);
      }
    }

    it("Node: npm install, npm ci and npm test (node --test) with a devDependency, Node >= 22", async () => {
      const { workspace } = await testProject(nodeProject, "npm", { npm_config_registry: npm.url });
      expect(npm.requests.map((r) => r.url)).toContain(npm.tarballPath);
      // npm's cache is in the package cache volume, not in the workspace.
      expect(existsSync(join(workspace, ".npm"))).toBe(false);
    });

    it("Python: a venv, pip install -e . of a C extension and a dependency from the index, its tests", async () => {
      await testProject(pythonProject, "pypi", { PIP_INDEX_URL: pip.indexUrl });
      expect(pip.requests.map((r) => r.url)).toContain(pip.wheelPath);
    });

    it("Go: go test ./... with a module from the module proxy, checked against go.sum", async () => {
      const { workspace } = await testProject(goProject(go.goSum), "go", { GOPROXY: go.url });
      expect(go.requests.map((r) => r.url)).toContain(`/${GO_FIXTURE_MODULE}/@v/v1.0.0.zip`);
      // Go's module and build caches are in the package cache volume, not in the workspace.
      expect(readdirSync(workspace).sort()).toEqual(["app.go", "app_test.go", "go.mod", "go.sum"]);
    });

    it("Rust: cargo test with a crate from a registry that replaces crates.io in cargo's config", async () => {
      const cargoHome = join(scratch, "cargo-home");
      mkdirSync(cargoHome, { recursive: true });
      writeFileSync(
        join(cargoHome, "config.toml"),
        `[source.crates-io]\nreplace-with = "stub"\n\n[source.stub]\nregistry = "${cargo.indexUrl}"\n`,
      );
      const { workspace } = await testProject(rustProject, "cargo", { CARGO_HOME: cargoHome });
      expect(cargo.requests.map((r) => r.url)).toContain(cargo.cratePath);
      expect(readdirSync(workspace).sort()).toEqual(["Cargo.lock", "Cargo.toml", "src", "target"]);
    });

    it("Java: mvn test with JUnit, Maven's plugins and all from the mirror the host's settings.xml names", async () => {
      const home = join(scratch, "maven-home");
      mkdirSync(join(home, ".m2"), { recursive: true });
      writeFileSync(
        join(home, ".m2", "settings.xml"),
        `<settings><mirrors><mirror><id>stub</id><mirrorOf>*</mirrorOf><url>${maven.url}</url></mirror></mirrors></settings>\n`,
      );
      const { workspace } = await testProject(mavenProject, "maven", { HOME: home });
      expect(maven.requests.map((r) => r.url)).toContain("/maven2/junit/junit/4.13.2/junit-4.13.2.jar");
      expect(readdirSync(workspace).sort()).toEqual(["pom.xml", "src", "target"]);
    });

    it("C: make && ./test, no network at all", async () => {
      await testProject(cProject, undefined);
    });
  },
);
