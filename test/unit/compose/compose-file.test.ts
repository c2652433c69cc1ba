/**
 * docker-compose.yml's `sandbox` service must be the container harness creates: its settings are
 * translated into a Docker create request here and compared whole with `containerCreateOptions()`.
 * A setting added, removed or changed on either side (or a compose key this translation does not
 * know) fails the test.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseMemory } from "../../../src/config.js";
import {
  containerCreateOptions,
  type SandboxSettings,
} from "../../../src/sandbox/docker/container/container-spec.js";
import { SANDBOX_DEFAULTS } from "../../../src/sandbox/sandbox-request.js";

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
type Service = Record<string, unknown>;

/** Compose's `${VAR}`, `${VAR:-default}`, `${VAR-default}` (nested) and `$$`, on every string. */
function interpolate(value: unknown, env: Record<string, string>): unknown {
  if (typeof value === "string") {
    let text = value.replaceAll("$$", "\u0000");
    const innermost = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)-([^${}]*))?\}/;
    for (let match = innermost.exec(text); match; match = innermost.exec(text)) {
      const [whole, name = "", colon, fallback] = match;
      const set = env[name];
      const useFallback = fallback !== undefined && (set === undefined || (colon === ":" && set === ""));
      text = text.replace(whole, useFallback ? fallback : (set ?? ""));
    }
    return text.replaceAll("\u0000", "$");
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, env));
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  return value;
}

function loadServices(env: Record<string, string>): Record<string, Service> {
  const file = parse(readFileSync(root("docker-compose.yml"), "utf8")) as {
    services: Record<string, Service>;
  };
  return interpolate(file.services, env) as Record<string, Service>;
}

function seconds(duration: unknown): number {
  const match = /^(\d+)(s|m)$/.exec(String(duration));
  if (!match) throw new Error(`unsupported duration '${String(duration)}'`);
  return Number(match[1]) * (match[2] === "m" ? 60 : 1);
}

/** Compose's `healthcheck:` as the create request's `Healthcheck` (durations in nanoseconds). */
function healthcheck(value: Record<string, unknown>): Docker.HealthConfig {
  const config: Docker.HealthConfig = {};
  const keys: Record<string, (value: never) => void> = {
    test: (v: string[]) => (config.Test = v),
    interval: (v: string) => (config.Interval = seconds(v) * 1e9),
    timeout: (v: string) => (config.Timeout = seconds(v) * 1e9),
    retries: (v: number) => (config.Retries = v),
  };
  for (const [key, v] of Object.entries(value)) {
    const apply = keys[key];
    if (apply === undefined)
      throw new Error(`docker-compose.yml: healthcheck key '${key}' is not checked here`);
    apply(v as never);
  }
  return config;
}

/** What Docker is asked for when compose creates the service. Throws on a key it does not know. */
function toCreateOptions(service: Service): Docker.ContainerCreateOptions {
  const host: Docker.HostConfig = {};
  const options: Docker.ContainerCreateOptions = { HostConfig: host };
  const keys: Record<string, (value: never) => void> = {
    // Which image is compose's business (it builds ./sandbox); harness builds the same folder.
    build: () => {},
    image: () => {},
    command: (v: string[]) => (options.Cmd = v),
    user: (v: string) => (options.User = v),
    working_dir: (v: string) => (options.WorkingDir = v),
    environment: (v: string[]) => (options.Env = v),
    tty: (v: boolean) => (options.Tty = v),
    stdin_open: (v: boolean) => (options.OpenStdin = v),
    stop_grace_period: (v: string) => (options.StopTimeout = seconds(v)),
    healthcheck: (v: Record<string, unknown>) => (options.Healthcheck = healthcheck(v)),
    volumes: (v: Array<Record<string, unknown>>) =>
      (host.Mounts = v.map((m) => ({
        Type: m["type"] as "bind",
        Source: m["source"] as string,
        Target: m["target"] as string,
        ReadOnly: m["read_only"] as boolean,
      }))),
    network_mode: (v: string) => {
      host.NetworkMode = v;
      options.NetworkDisabled = v === "none";
    },
    cap_drop: (v: string[]) => (host.CapDrop = v),
    cap_add: (v: string[]) => (host.CapAdd = v),
    // Compose reads a seccomp profile from its file (relative to the project) and sends it compacted.
    security_opt: (v: string[]) =>
      (host.SecurityOpt = v.map((opt) => {
        const profile = /^seccomp[=:](?!unconfined$)(.+)$/.exec(opt)?.[1];
        return profile === undefined
          ? opt
          : `seccomp=${JSON.stringify(JSON.parse(readFileSync(root(profile), "utf8")))}`;
      })),
    privileged: (v: boolean) => (host.Privileged = v),
    read_only: (v: boolean) => (host.ReadonlyRootfs = v),
    tmpfs: (v: string[]) =>
      (host.Tmpfs = Object.fromEntries(
        v.map((entry) => [entry.split(":")[0], entry.slice(entry.indexOf(":") + 1)]),
      )),
    mem_limit: (v: string) => (host.Memory = parseMemory(String(v))),
    memswap_limit: (v: string) => (host.MemorySwap = parseMemory(String(v))),
    cpus: (v: number) => (host.NanoCpus = Math.round(Number(v) * 1e9)),
    pids_limit: (v: number) => (host.PidsLimit = v),
    ipc: (v: string) => (host.IpcMode = v),
    init: (v: boolean) => (host.Init = v),
    restart: (v: string) => (host.RestartPolicy = { Name: v }),
    runtime: (v: string) => (host.Runtime = v),
    ulimits: (v: Record<string, number | { soft: number; hard: number }>) =>
      (host.Ulimits = Object.entries(v).map(([Name, l]) =>
        typeof l === "number" ? { Name, Soft: l, Hard: l } : { Name, Soft: l.soft, Hard: l.hard },
      )),
  };
  for (const [key, value] of Object.entries(service)) {
    const apply = keys[key];
    if (apply === undefined) throw new Error(`docker-compose.yml: sandbox key '${key}' is not checked here`);
    apply(value as never);
  }
  return options;
}

/** What `containerCreateOptions` produces, less what compose sets by itself (image, stdin attach). */
function expected(settings: SandboxSettings): Docker.ContainerCreateOptions {
  const { Image: _image, AttachStdin: _attach, ...rest } = containerCreateOptions(settings);
  return rest;
}

const settings = (user: string, workspace: string): SandboxSettings => ({
  image: "harness-sandbox:any",
  workspace,
  ...SANDBOX_DEFAULTS,
  user,
});

describe("docker-compose.yml", () => {
  it("gives the sandbox service exactly the hardening harness applies (default user)", () => {
    const { sandbox } = loadServices({ HARNESS_WORKSPACE: "/srv/project" });
    expect(toCreateOptions(sandbox ?? {})).toEqual(expected(settings("1000:1000", "/srv/project")));
  });

  it("follows HARNESS_UID/HARNESS_GID into the user and the tmpfs owners, as harness does", () => {
    const env = { HARNESS_WORKSPACE: "/home/dev/app", HARNESS_UID: "1234", HARNESS_GID: "2345" };
    const { sandbox } = loadServices(env);
    expect(toCreateOptions(sandbox ?? {})).toEqual(expected(settings("1234:2345", "/home/dev/app")));
  });

  it("keeps the API key in the harness service and mounts the workspace at its host path", () => {
    const { sandbox, harness } = loadServices({ PWD: "/home/dev/app", HOME: "/home/dev" });
    expect(JSON.stringify(sandbox)).not.toMatch(/ANTHROPIC|env_file|docker\.sock/);
    expect(harness?.["env_file"]).toEqual([{ path: ".env", required: false }]);
    expect(harness?.["volumes"]).toEqual([
      "/var/run/docker.sock:/var/run/docker.sock",
      "/home/dev/app:/home/dev/app",
      // The egress gateway's socket directory is under XDG_STATE_HOME: same path on both sides.
      "/home/dev/.local/state/harness:/home/dev/.local/state/harness",
    ]);
    expect(harness?.["environment"]).toMatchObject({ XDG_STATE_HOME: "/home/dev/.local/state" });
    expect(harness?.["working_dir"]).toBe("/home/dev/app");
    const explicit = loadServices({ PWD: "/elsewhere", HARNESS_WORKSPACE: "/srv/p" })["harness"];
    expect(explicit?.["volumes"]).toContain("/srv/p:/srv/p");
  });

  it("builds the harness image from a Dockerfile whose Node base is an argument with the same default", () => {
    const { harness } = loadServices({});
    const build = harness?.["build"] as { dockerfile: string; args: Record<string, string> };
    const dockerfile = readFileSync(root(build.dockerfile), "utf8");
    const declared = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
    expect(declared).toBe("node:20-bookworm-slim");
    expect(build.args["NODE_IMAGE"]).toBe(declared);
    expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\}/m);
  });
});
