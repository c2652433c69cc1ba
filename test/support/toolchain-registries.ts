/**
 * The registry stubs of the toolchain tests, started together, and each ecosystem's case: its
 * project, the `--allow` preset it needs, and the host configuration (variables or files) that
 * makes that preset name the stub, as a company mirror would be named.
 *
 * The stubs listen on one of the host's own non-loopback addresses, not on 127.0.0.2: Go's and
 * Java's HTTP clients never send a loopback address to a proxy (they would connect to the
 * sandbox's own loopback), and a real registry is never on loopback. The sandbox reaches them
 * through the gateway, allowed as IP literals with `--allow-private` (egress-cli.test.ts does the
 * same with loopback). While the tests run, hosts that reach that address can fetch the fixtures
 * too (and Central's files through the Maven mirror).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { startCargoRegistryStub } from "./egress/cargo-registry-stub.js";
import { GO_FIXTURE_MODULE, GO_FIXTURE_VERSION, startGoProxyStub } from "./egress/go-proxy-stub.js";
import { startMavenMirrorStub } from "./egress/maven-mirror-stub.js";
import { type NpmRegistryStub, startNpmRegistryStub } from "./egress/npm-registry-stub.js";
import type { Origin } from "./egress/origin-server.js";
import { type PipIndexStub, startPipIndexStub } from "./egress/pip-index-stub.js";
import {
  cProject,
  ecosystemCases,
  goProject,
  mavenProject,
  nodeProject,
  type Project,
  pythonProject,
  rustProject,
} from "./toolchain-projects.js";

/** One ecosystem as a newcomer meets it: its project, its command, its preset. */
export interface Ecosystem {
  name: string;
  project: Project;
  /** `--allow` value; none when the project needs no registry. */
  preset: string | undefined;
  /** harness's environment: the host configuration that names the stub. */
  env: Record<string, string>;
  /** The request path that shows the dependency came from the stub. */
  fetched: string | undefined;
  origin: Origin | undefined;
}

export interface ToolchainRegistries extends AsyncDisposable {
  /** The address the stubs listen on, for `--allow-private` IP literal entries. */
  address: string;
  npm: NpmRegistryStub;
  pip: PipIndexStub;
  ecosystems: Ecosystem[];
}

/** The host's first IPv4 address that is not loopback. */
function hostAddress(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && i.family === "IPv4" && !i.internal);
  if (found === undefined) throw new Error("the host has no IPv4 address other than loopback for the stubs");
  return found.address;
}

/** Starts every stub; `scratch` holds the host configuration files (cargo's home, Maven's). */
export async function startToolchainRegistries(scratch: string): Promise<ToolchainRegistries> {
  const address = hostAddress();
  const [npm, pip, go, cargo, maven] = await Promise.all([
    startNpmRegistryStub(address, { address }),
    startPipIndexStub(address, { address }),
    startGoProxyStub(address, address),
    startCargoRegistryStub(address, address),
    startMavenMirrorStub(address, address),
  ]);
  const cargoHome = join(scratch, "cargo-home");
  mkdirSync(cargoHome, { recursive: true });
  writeFileSync(
    join(cargoHome, "config.toml"),
    `[source.crates-io]\nreplace-with = "stub"\n\n[source.stub]\nregistry = "${cargo.indexUrl}"\n`,
  );
  const mavenHome = join(scratch, "maven-home");
  mkdirSync(join(mavenHome, ".m2"), { recursive: true });
  writeFileSync(
    join(mavenHome, ".m2", "settings.xml"),
    `<settings><mirrors><mirror><id>stub</id><mirrorOf>*</mirrorOf><url>${maven.url}</url></mirror></mirrors></settings>\n`,
  );
  const cases: Omit<Ecosystem, "preset">[] = [
    {
      name: "Node",
      project: nodeProject(npm),
      env: { npm_config_registry: npm.url },
      fetched: npm.tarballPath,
      origin: npm,
    },
    {
      name: "Python",
      project: pythonProject,
      env: { PIP_INDEX_URL: pip.indexUrl },
      fetched: pip.wheelPath,
      origin: pip,
    },
    {
      name: "Go",
      project: goProject(go.goSum),
      env: { GOPROXY: go.url },
      fetched: `/${GO_FIXTURE_MODULE}/@v/${GO_FIXTURE_VERSION}.zip`,
      origin: go,
    },
    {
      name: "Rust",
      project: rustProject,
      env: { CARGO_HOME: cargoHome },
      fetched: cargo.cratePath,
      origin: cargo,
    },
    {
      name: "Java",
      project: mavenProject,
      env: { HOME: mavenHome },
      fetched: "/maven2/junit/junit/4.13.2/junit-4.13.2.jar",
      origin: maven,
    },
    { name: "C", project: cProject, env: {}, fetched: undefined, origin: undefined },
  ];
  const ecosystems = cases.map((c): Ecosystem => {
    const known = ecosystemCases.find((e) => e.name === c.name);
    if (known?.command !== c.project.command)
      throw new Error(`${c.name}: not the command ecosystemCases names`);
    return { ...c, preset: known.preset };
  });
  const close = async () => {
    await Promise.all([npm, pip, go, cargo, maven].map((stub) => stub.close()));
  };
  return { address, npm, pip, ecosystems, [Symbol.asyncDispose]: close };
}
