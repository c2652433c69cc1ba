/**
 * What SWE-ReX needs on this engine, made offline: an image with its server (harness's image plus
 * swe-rex, swerex-image/Dockerfile), and a network on which its client reaches that server.
 *
 * Its DockerDeployment publishes the server's port (`docker run -p PORT:8000`) on the engine's default
 * bridge. An engine run without one (`dockerd --bridge=none`, as this machine's) leaves the container
 * only `lo` and the client nothing to reach, so the bench makes a bridge network of its own, records it
 * by id and removes it at the end. BENCH_SWEREX_NETWORK=host runs it on the host's network instead
 * (its server then listens on the host's port 8000, which must be free).
 */
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type Docker from "dockerode";
import { recordCreated } from "./created-record.js";
import { PEER_PACKAGES } from "./peers-venv.js";

const HERE = join(dirname(fileURLToPath(import.meta.url)), "swerex-image");
const SWEREX = PEER_PACKAGES.find((p) => p.startsWith("swe-rex==")) ?? "swe-rex";
/** harness's image is Debian bookworm's: python 3.11. */
const IMAGE_PYTHON = "3.11";

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(command, args, { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")} failed: ${r.stderr.trim().slice(-800)}`);
  return r.stdout;
}

/** The image's tag, built once per base image, client environment and Dockerfile. */
export async function ensureSwerexImage(
  docker: Docker,
  python: string,
  baseImage: string,
  say: (line: string) => void,
): Promise<string> {
  const base = await docker.getImage(baseImage).inspect();
  const freeze = run(python, ["-m", "pip", "freeze", "--exclude-editable"]);
  const hash = createHash("sha256")
    .update(base.Id)
    .update(freeze)
    .update(readFileSync(join(HERE, "Dockerfile")))
    .update(readFileSync(join(HERE, "swerex_remote.py")))
    .digest("hex")
    .slice(0, 12);
  const tag = `harness-bench-swerex:${hash}`;
  if (
    await docker
      .getImage(tag)
      .inspect()
      .then(
        () => true,
        () => false,
      )
  )
    return tag;
  say(`building ${tag} (swe-rex's server on ${baseImage}, once)`);
  const context = mkdtempSync(join(tmpdir(), "harness-bench-swerex-"));
  try {
    copyFileSync(join(HERE, "Dockerfile"), join(context, "Dockerfile"));
    copyFileSync(join(HERE, "swerex_remote.py"), join(context, "swerex_remote.py"));
    // The client's own versions, for the image's python and a glibc as old as Debian's.
    writeFileSync(join(context, "constraints.txt"), freeze);
    // biome-ignore format: flags and their values in pairs
    run(python, [
      "-m", "pip", "install", "--quiet", "--target", join(context, "site"),
      "--python-version", IMAGE_PYTHON, "--implementation", "cp", "--abi", `cp${IMAGE_PYTHON.replace(".", "")}`,
      "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64", "--only-binary=:all:",
      "-c", join(context, "constraints.txt"), SWEREX,
    ]);
    // The classic builder: it uses the local base image and never asks a registry.
    run(
      "docker",
      [
        "build",
        "--quiet",
        "--network",
        "none",
        "--force-rm",
        "-t",
        tag,
        "--build-arg",
        `BASE_IMAGE=${baseImage}`,
        context,
      ],
      { ...process.env, DOCKER_BUILDKIT: "0" },
    );
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
  return tag;
}

export interface SwerexNetwork {
  /** What `docker run --network` gets. */
  name: string;
  /** What the table says SWE-ReX had. */
  note: string;
  /** The host port its server is reached on, when fixed (host network). */
  port?: number;
}

/** The network SWE-ReX runs on (see the header); one the bench makes is recorded in `recordDir`. */
export async function swerexNetwork(docker: Docker, recordDir: string): Promise<SwerexNetwork> {
  if (process.env["BENCH_SWEREX_NETWORK"] === "host")
    return { name: "host", note: "host's network (BENCH_SWEREX_NETWORK=host), port 8000", port: 8000 };
  const networks = await docker.listNetworks({ filters: { name: ["bridge"] } });
  if (networks.some((n) => n.Name === "bridge" && n.Driver === "bridge"))
    return { name: "bridge", note: "the engine's default bridge, its port published (its default)" };
  const name = `harness-bench-peers-${randomBytes(4).toString("hex")}`;
  const network = await docker.createNetwork({
    Name: name,
    Driver: "bridge",
    Labels: { "dev.harness.bench": "peers" },
  });
  recordCreated(recordDir, "network", network.id);
  return {
    name,
    note: "a bridge of the bench's own, its port published via docker-proxy (its default needs the engine's bridge, absent here)",
  };
}
