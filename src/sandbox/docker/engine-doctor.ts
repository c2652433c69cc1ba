/**
 * `harness doctor`'s checks that need the engine: what `docker info` / `docker version` report, the
 * runtimes, the sandbox image. Gathering (`gatherEngineFacts`) is apart from deciding
 * (`engineChecks`), so the decisions are tested with made-up engine info.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import type Docker from "dockerode";
import { HarnessError } from "../../errors.js";
import type { DoctorCheck } from "../doctor-check.js";
import { sandboxContextDir, sandboxImageTag } from "./container/image.js";
import { connectEngine } from "./engine/docker-client.js";
import {
  type EngineVersionInfo,
  engineKindOf,
  type PodmanHostInfo,
  podmanHostInfo,
  ROOTLESS_LIMITS_FIX,
  rootlessLimitsProblem,
} from "./engine/engine-kind.js";
import { type EngineRuntime, isRunsc, runscDaemonJson, runtimeProblem } from "./engine/runtime-check.js";

/** The parts of `docker info` the checks read (Docker and Podman's compat API both fill them). */
export interface EngineInfo {
  OSType?: string;
  OperatingSystem?: string;
  CgroupVersion?: string;
  CgroupDriver?: string;
  Driver?: string;
  DockerRootDir?: string;
  SecurityOptions?: string[];
  Runtimes?: Record<string, EngineRuntime>;
  DefaultRuntime?: string;
}

/** Everything the checks decide on, gathered from a reachable engine. */
export interface EngineFacts {
  /** Where harness connected, and from what setting. */
  endpoint: string;
  source: string;
  /** The engine is on another machine: its data root is not on this one. */
  remote: boolean;
  info: EngineInfo;
  /** Engine version and API version (`docker version`). */
  version: string;
  apiVersion: string;
  /** The sandbox image tag harness would use, and whether the engine has it. */
  image: string;
  imagePresent: boolean;
  /** The Dockerfile's base image, and whether the engine has it (the build then needs no registry). */
  baseImage: string;
  baseImagePresent: boolean;
  /** Whether the sandbox image has python3 (allowlist mode's relay); undefined when not checked. */
  imageHasPython: boolean | undefined;
  /** Podman's own description of its host (GET /libpod/info: rootless, cgroup controllers); undefined on Docker. */
  podmanHost?: PodmanHostInfo | undefined;
}

/** What the user asked for: the checks fail where harness could not run it. */
export interface DoctorWants {
  runtime?: string | undefined;
  network: string;
}

function securityOptions(info: EngineInfo): string[] {
  return (info.SecurityOptions ?? []).map((o) => /name=([^,]+)/.exec(o)?.[1] ?? o);
}

/** The checks, one line each, from the facts: pure, so tests give it fake engine info. */
export function engineChecks(facts: EngineFacts, wants: DoctorWants): DoctorCheck[] {
  const { info } = facts;
  const checks: DoctorCheck[] = [];
  const os = info.OSType ?? "linux";
  checks.push(
    os === "linux"
      ? {
          name: "engine",
          status: "ok",
          detail: `${facts.endpoint} (${facts.source}): version ${facts.version}, API ${facts.apiVersion}, ${info.OperatingSystem ?? os}`,
        }
      : {
          name: "engine",
          status: "fail",
          detail: `${facts.endpoint} runs ${os} containers`,
          fix: "switch the engine to Linux containers",
        },
  );
  // v1 and v2 both enforce the memory, CPU and pid limits harness sets, except under rootless Podman.
  checks.push({
    name: "cgroup",
    status: "ok",
    detail: `v${info.CgroupVersion ?? "?"} (${info.CgroupDriver ?? "driver unknown"})`,
  });
  const limits = rootlessLimitsProblem(facts.podmanHost);
  if (limits !== undefined)
    checks.push({ name: "limits", status: "fail", detail: limits, fix: ROOTLESS_LIMITS_FIX });
  const options = securityOptions(info);
  // Podman's Docker-compatible /info does not list "rootless" among its SecurityOptions.
  const rootlessPodman = facts.podmanHost?.host?.security?.rootless === true;
  checks.push({
    name: "rootless",
    status: "ok",
    detail:
      options.includes("rootless") || rootlessPodman
        ? "yes: the engine runs as a normal user, a stronger boundary"
        : "no: the engine runs as root",
  });
  checks.push({ name: "storage driver", status: "ok", detail: info.Driver ?? "unknown" });
  checks.push(
    options.includes("seccomp")
      ? { name: "seccomp", status: "ok", detail: "supported: harness's profile applies" }
      : {
          name: "seccomp",
          status: "warn",
          detail: "the engine reports no seccomp support: harness's syscall filter does not apply",
          fix: "use an engine built with seccomp (Docker's Linux packages are)",
        },
  );
  const mac = ["apparmor", "selinux"].filter((o) => options.includes(o));
  checks.push({
    name: "AppArmor/SELinux",
    status: "ok",
    detail: mac.length > 0 ? mac.join(", ") : "neither (not required: capabilities and seccomp still apply)",
  });
  checks.push({
    name: "user namespaces",
    status: "ok",
    detail: rootlessPodman
      ? "remapped: rootless Podman's user namespace (the sandbox user keeps its uid, root inside is not root outside)"
      : options.includes("userns")
        ? "remapped: uids in the sandbox are unprivileged on the host"
        : "not remapped (harness never runs commands as root)",
  });
  checks.push(...runtimeChecks(info, wants));
  checks.push(imageCheck(facts));
  if (facts.imageHasPython === false) {
    checks.push({
      name: "allowlist mode",
      status: "warn",
      detail: `${facts.image} has no python3, which the network relay needs`,
      fix: "use harness's own image (no --image), or one with python3",
    });
  } else if (facts.imageHasPython === true) {
    checks.push({
      name: "allowlist mode",
      status: "ok",
      detail: "python3 in the image for the network relay",
    });
  }
  return checks;
}

function runtimeChecks(info: EngineInfo, wants: DoctorWants): DoctorCheck[] {
  const runtimes = info.Runtimes ?? {};
  const names = Object.keys(runtimes).sort();
  const checks: DoctorCheck[] = [
    {
      name: "runtimes",
      status: "ok",
      detail: `${names.join(", ") || "none listed"} (default ${info.DefaultRuntime ?? "runc"})`,
    },
  ];
  for (const name of names) {
    const runtime = runtimes[name] ?? {};
    if (name === wants.runtime || !isRunsc(name, runtime)) continue;
    const problem = runtimeProblem(name, "none", runtimes);
    if (problem !== undefined)
      checks.push({
        name: `runtime ${name}`,
        status: "warn",
        detail: "gVisor registered without --network=none: --runtime with it fails",
        fix: `register it as ${runscDaemonJson(name, runtime.path)} and reload dockerd (kill -HUP $(pidof dockerd))`,
      });
  }
  if (wants.runtime !== undefined) {
    const problem = runtimeProblem(wants.runtime, wants.network, runtimes);
    checks.push(
      problem === undefined
        ? { name: `runtime ${wants.runtime}`, status: "ok", detail: "registered, usable with this network" }
        : { name: `runtime ${wants.runtime}`, status: "fail", detail: problem },
    );
  }
  return checks;
}

function imageCheck(facts: EngineFacts): DoctorCheck {
  if (facts.imagePresent) return { name: "image", status: "ok", detail: `${facts.image} present` };
  if (facts.baseImagePresent)
    return {
      name: "image",
      status: "warn",
      detail: `${facts.image} not built yet; its base ${facts.baseImage} is present`,
      fix: "run 'harness image' now, or the first run builds it (its apt step needs Debian's mirror)",
    };
  return {
    name: "image",
    status: "warn",
    detail: `neither ${facts.image} nor its base ${facts.baseImage} is present: the first run pulls the base from a registry`,
    fix: "offline, run 'npm run base-image' (builds the base from Debian's packages), then 'harness image'",
  };
}

/** The Dockerfile's `ARG BASE_IMAGE=` default. */
function baseImageOf(dir: string): string {
  const match = /^ARG BASE_IMAGE=(\S+)/m.exec(readFileSync(join(dir, "Dockerfile"), "utf8"));
  return match?.[1] ?? "unknown";
}

async function imagePresent(docker: Docker, tag: string): Promise<boolean> {
  return docker
    .getImage(tag)
    .inspect()
    .then(() => true)
    .catch(() => false);
}

/** Looks for python3 in the image without running anything: a created, never started container. */
async function imageHasPython(docker: Docker, image: string): Promise<boolean> {
  const container = await docker.createContainer({
    Image: image,
    Cmd: ["true"],
    NetworkDisabled: true,
    Labels: { "dev.harness.doctor": "1" },
  });
  try {
    // getArchive, drained, not infoArchive: the HEAD request's socket stayed open and held the process.
    const archive = await container.getArchive({ path: "/usr/bin/python3" });
    archive.resume();
    await finished(archive);
    return true;
  } catch {
    return false;
  } finally {
    await container.remove({ force: true }).catch(() => {});
  }
}

/** Reads what the checks need from a connected engine. */
export async function gatherEngineFacts(
  docker: Docker,
  endpoint: { host: string; source: string; remote: boolean },
  image?: string,
): Promise<EngineFacts> {
  const [info, version] = await Promise.all([docker.info() as Promise<EngineInfo>, docker.version()]);
  const podmanHost =
    engineKindOf(version as EngineVersionInfo) === "podman"
      ? await podmanHostInfo(docker).catch(() => undefined)
      : undefined;
  const dir = sandboxContextDir();
  const tag = image ?? sandboxImageTag(dir);
  const baseImage = baseImageOf(dir);
  const [present, basePresent] = await Promise.all([
    imagePresent(docker, tag),
    imagePresent(docker, baseImage),
  ]);
  return {
    endpoint: endpoint.host,
    source: endpoint.source,
    remote: endpoint.remote,
    info,
    version: version.Version,
    apiVersion: version.ApiVersion,
    image: tag,
    imagePresent: present,
    baseImage,
    baseImagePresent: basePresent,
    imageHasPython: present ? await imageHasPython(docker, tag).catch(() => undefined) : undefined,
    podmanHost,
  };
}

/**
 * Connects and gathers; an engine that cannot be reached is one failed check (with the connection
 * error's own advice), never an exception.
 */
export async function inspectEngine(
  env: NodeJS.ProcessEnv,
  context: string | undefined,
  image: string | undefined,
): Promise<{ facts: EngineFacts } | { unreachable: DoctorCheck }> {
  try {
    const { docker, endpoint } = await connectEngine(env, context);
    return { facts: await gatherEngineFacts(docker, endpoint, image) };
  } catch (error) {
    // A connection refused, a TLS handshake or an engine that answered ping but not info: all one line.
    const message =
      error instanceof HarnessError
        ? error.message
        : `the engine did not answer: ${(error as Error).message}`;
    return { unreachable: { name: "engine", status: "fail", detail: message.split("\n")[0] ?? "" } };
  }
}
