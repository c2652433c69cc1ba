/**
 * Adversarial: one workspace's task plants packages in npm's and pip's caches, and a task in another
 * workspace of the same user installs the same packages, unpinned. The planting task has no network
 * at all: it answers, on its own loopback, at the registries' very addresses (127.0.0.2 is its own
 * too), and lets npm and pip store what it answers under the keys the other task will look up:
 * npm's `_cacache` (a packument fresh for a year naming a planted tarball, and that tarball), pip's
 * HTTP cache (a project page carrying the registry's real ETag, so the other task's revalidation gets
 * a 304 and keeps it, naming a planted wheel, and that wheel), and pip's wheel cache (a planted wheel
 * where pip looks for the one it built from the real source distribution). The other task, through
 * the allowlist to the real registry stubs, must get the genuine packages: with a cache per
 * workspace it never sees the planted ones. Checked from the host, in the other workspace's files.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chownSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSandboxImage } from "../../src/sandbox/docker/container/image.js";
import { skipDocker } from "../support/docker-available.js";
import {
  NPM_FIXTURE_EXPORT,
  NPM_FIXTURE_PACKAGE,
  NPM_FIXTURE_VERSION,
  type NpmRegistryStub,
  packageTarball,
  packumentFor,
  startNpmRegistryStub,
  tarballUrl,
} from "../support/egress/npm-registry-stub.js";
import {
  fixtureWheel,
  PIP_FIXTURE_MODULE,
  PIP_FIXTURE_PROJECT,
  PIP_FIXTURE_VALUE,
  PIP_SDIST_MODULE,
  PIP_SDIST_PROJECT,
  PIP_SDIST_VALUE,
  type PipIndexStub,
  projectPage,
  startPipIndexStub,
} from "../support/egress/pip-index-stub.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

const REGISTRY_IP = "127.0.0.2";
/** This test run's sandbox user: its caches are its own. */
const UID = 60_000 + (process.pid % 5_000);
const PLANTED = "PLANTED by another workspace's task";
const PLANTER = fileURLToPath(new URL("../support/egress/cache-planting.py", import.meta.url));

function workspace(prefix: string): { path: string; [Symbol.asyncDispose](): Promise<void> } {
  const ws = makeWorkspace(prefix);
  chownSync(ws.path, UID, UID);
  return {
    path: ws.path,
    async [Symbol.asyncDispose]() {
      await removeWorkspaceContainers(ws.path);
      ws[Symbol.dispose]();
    },
  };
}

/** What the real registry answers `url` (asked from the host: the planting task has no network). */
function fetchFromHost(url: string): Promise<{ etag: string; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () => resolve({ etag: String(res.headers.etag), body }));
    }).on("error", reject);
  });
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

describe.skipIf(skipDocker)("adversarial: the package cache between workspaces", { timeout: 400_000 }, () => {
  const docker = new Docker();
  let image = "";
  let npm: NpmRegistryStub;
  let pip: PipIndexStub;

  beforeAll(async () => {
    image = await ensureSandboxImage(docker);
    [npm, pip] = await Promise.all([
      startNpmRegistryStub(REGISTRY_IP, { address: REGISTRY_IP }),
      startPipIndexStub(REGISTRY_IP, { address: REGISTRY_IP }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([npm?.close(), pip?.close()]);
    await runCli(["rm", "--cache", "--user", `${UID}`]);
  });

  /** Writes the planting task's files into `dir` (its workspace): the routes and what they answer. */
  async function plantingKit(dir: string): Promise<void> {
    mkdirSync(dir);
    const tarball = await packageTarball(PLANTED);
    const wheel = fixtureWheel(PLANTED);
    const sdistWheel = fixtureWheel(PLANTED, PIP_SDIST_PROJECT, PIP_SDIST_MODULE);
    const wheelName = `${PIP_FIXTURE_MODULE}-1.0.0-py3-none-any.whl`;
    writeFileSync(join(dir, "package.tgz"), tarball);
    writeFileSync(join(dir, "packument.json"), packumentFor(npm.url, tarball));
    writeFileSync(join(dir, wheelName), wheel);
    writeFileSync(join(dir, "page.html"), projectPage(`/packages/${wheelName}`, wheelName, sha256(wheel)));
    writeFileSync(join(dir, `${PIP_SDIST_MODULE}-1.0.0-py3-none-any.whl`), sdistWheel);
    copyFileSync(PLANTER, join(dir, "cache-planting.py"));
    const forever = "public, max-age=31536000, immutable";
    const realEtag = (await fetchFromHost(`${pip.indexUrl}${PIP_FIXTURE_PROJECT}/`)).etag;
    const routes = {
      servers: [
        {
          host: REGISTRY_IP,
          port: npm.port,
          routes: {
            [`/${NPM_FIXTURE_PACKAGE}`]: {
              file: "packument.json",
              type: "application/json",
              headers: { "cache-control": "public, max-age=31536000" },
            },
            [new URL(tarballUrl(npm.url)).pathname]: {
              file: "package.tgz",
              type: "application/octet-stream",
              headers: { "cache-control": forever },
            },
          },
        },
        {
          host: REGISTRY_IP,
          port: pip.port,
          routes: {
            [`/simple/${PIP_FIXTURE_PROJECT}/`]: {
              file: "page.html",
              type: "text/html",
              // The real page's ETag: the other task's revalidation is answered 304 by the real index.
              headers: { "cache-control": "max-age=600, public", etag: realEtag },
            },
            [`/packages/${wheelName}`]: {
              file: wheelName,
              type: "application/octet-stream",
              headers: { "cache-control": forever },
            },
          },
        },
      ],
    };
    writeFileSync(join(dir, "routes.json"), JSON.stringify(routes));
    execFileSync("chown", ["-R", `${UID}:${UID}`, dir]);
  }

  const npmFlags = `--no-audit --no-fund --no-update-notifier --fetch-retries=0`;
  const pipFlags = `--trusted-host ${REGISTRY_IP} --disable-pip-version-check --no-input --retries 0`;

  it("workspace A plants in npm's and pip's caches; workspace B's unpinned installs get the genuine packages", async () => {
    await using a = workspace("harness-cache-planter-");
    await using b = workspace("harness-cache-victim-");
    await plantingKit(join(a.path, "plant"));
    const sdistUrl = `http://${REGISTRY_IP}:${pip.port}${pip.sdistPath}`;
    const plant = [
      "cd /workspace/plant",
      "{ python3 cache-planting.py serve routes.json & }",
      "until [ -e READY ]; do sleep 0.1; done",
      "cd /workspace",
      `npm install ${NPM_FIXTURE_PACKAGE} --registry ${npm.url} ${npmFlags}`,
      `python3 -m pip install ${PIP_FIXTURE_PROJECT} --index-url ${pip.indexUrl} --target /workspace/pylib ${pipFlags}`,
      `python3 plant/cache-planting.py plant-wheel "$PIP_CACHE_DIR" ${sdistUrl} ${pip.sdistSha256} plant/${PIP_SDIST_MODULE}-1.0.0-py3-none-any.whl`,
    ].join(" && ");
    const planted = await runCli(["exec", "--workspace", a.path, "--image", image, "--", plant], {
      timeoutMs: 240_000,
    });
    expect(planted.code, `${planted.stdout}${planted.stderr}`).toBe(0);
    // The plant took in A's own cache: A's installs are the planted packages.
    expect(readFileSync(join(a.path, "node_modules", NPM_FIXTURE_PACKAGE, "index.js"), "utf8")).toContain(
      PLANTED,
    );
    expect(readFileSync(join(a.path, "pylib", PIP_FIXTURE_MODULE, "__init__.py"), "utf8")).toContain(PLANTED);

    // B: the same packages unpinned, then with a lockfile that has the genuine integrity (npm ci).
    const packument = JSON.parse((await fetchFromHost(`${npm.url}${NPM_FIXTURE_PACKAGE}`)).body) as {
      versions: Record<string, { dist: { integrity: string } }>;
    };
    const lock = {
      name: "ci",
      lockfileVersion: 3,
      requires: true,
      packages: {
        "": { name: "ci", dependencies: { [NPM_FIXTURE_PACKAGE]: NPM_FIXTURE_VERSION } },
        [`node_modules/${NPM_FIXTURE_PACKAGE}`]: {
          version: NPM_FIXTURE_VERSION,
          resolved: tarballUrl(npm.url),
          integrity: packument.versions[NPM_FIXTURE_VERSION]?.dist.integrity,
        },
      },
    };
    mkdirSync(join(b.path, "ci"));
    writeFileSync(
      join(b.path, "ci", "package.json"),
      JSON.stringify({ name: "ci", dependencies: { [NPM_FIXTURE_PACKAGE]: NPM_FIXTURE_VERSION } }),
    );
    writeFileSync(join(b.path, "ci", "package-lock.json"), JSON.stringify(lock));
    execFileSync("chown", ["-R", `${UID}:${UID}`, join(b.path, "ci")]);
    const install = [
      `npm install ${NPM_FIXTURE_PACKAGE} --registry ${npm.url} ${npmFlags}`,
      `python3 -m pip install ${PIP_FIXTURE_PROJECT} --index-url ${pip.indexUrl} --target /workspace/pylib ${pipFlags}`,
      `python3 -m pip install --no-build-isolation ${PIP_SDIST_PROJECT} --index-url ${pip.indexUrl} --target /workspace/pylib-sdist ${pipFlags}`,
      `cd ci && npm ci --registry ${npm.url} ${npmFlags}`,
    ].join(" && ");
    const victim = await runCli(
      [
        ...["exec", "--workspace", b.path, "--image", image],
        ...["--allow-host", `${REGISTRY_IP}:${npm.port}`, "--allow-host", `${REGISTRY_IP}:${pip.port}`],
        ...["--allow-private", "--", install],
      ],
      { timeoutMs: 240_000 },
    );
    expect(victim.code, `${victim.stdout}${victim.stderr}`).toBe(0);
    const read = (...path: string[]) => readFileSync(join(b.path, ...path), "utf8");
    expect.soft(read("ci", "node_modules", NPM_FIXTURE_PACKAGE, "index.js")).toContain(NPM_FIXTURE_EXPORT);
    expect
      .soft(read("node_modules", NPM_FIXTURE_PACKAGE, "index.js"), "npm install took the planted tarball")
      .toContain(NPM_FIXTURE_EXPORT);
    expect
      .soft(read("pylib", PIP_FIXTURE_MODULE, "__init__.py"), "pip took the planted page and wheel")
      .toContain(PIP_FIXTURE_VALUE);
    expect
      .soft(
        read("pylib-sdist", PIP_SDIST_MODULE, "__init__.py"),
        "pip took the planted wheel from its wheel cache",
      )
      .toContain(PIP_SDIST_VALUE);
    // And so B asked the real registries: the packument and tarball, the page, the wheel and the sdist.
    const seen = [...npm.requests, ...pip.requests].map((r) => r.url);
    expect(seen).toEqual(
      expect.arrayContaining([
        `/${NPM_FIXTURE_PACKAGE}`,
        new URL(tarballUrl(npm.url)).pathname,
        pip.wheelPath,
        pip.sdistPath,
      ]),
    );
  });
});
