/**
 * The package cache through the built CLI, the real sandbox, real npm and pip, and registry stubs on
 * loopback reached through the allowlist (as egress-cli.test.ts: an address other than the sandbox's
 * own 127.0.0.1, allowed as an IP literal with --allow-private). Runs in one workspace and then in
 * another install the same packages; their egress records show what each still downloaded.
 *
 * Each test run has a sandbox uid of its own (the workspaces are chowned to it), so its cache
 * volumes are its own: nobody else's cache is read, pruned or removed here.
 */
import { chownSync, existsSync, mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSandboxImage } from "../../src/sandbox/docker/container/image.js";
import {
  LABEL_PACKAGE_CACHE,
  packageCacheVolumeName,
} from "../../src/sandbox/docker/package-cache/package-cache-volume.js";
import { imageWithoutPython } from "../integration/egress-fixture.js";
import { skipDocker } from "../support/docker-available.js";
import {
  NPM_FIXTURE_PACKAGE,
  type NpmRegistryStub,
  startNpmRegistryStub,
} from "../support/egress/npm-registry-stub.js";
import {
  PIP_FIXTURE_MODULE,
  PIP_FIXTURE_PROJECT,
  type PipIndexStub,
  startPipIndexStub,
} from "../support/egress/pip-index-stub.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

const REGISTRY_IP = "127.0.0.2";
/** This test run's sandbox user, and so its cache volume's owner. */
const UID = 20_000 + (process.pid % 20_000);
/** The cache volume of a workspace of this run. */
const volumeOf = (workspace: string) => packageCacheVolumeName(UID, realpathSync(workspace));

type Json = Record<string, unknown>;

/** A workspace owned by this run's uid, its container removed when it goes. */
function cacheWorkspace(): { path: string; [Symbol.asyncDispose](): Promise<void> } {
  const ws = makeWorkspace("harness-cache-ws-");
  chownSync(ws.path, UID, UID);
  return {
    path: ws.path,
    async [Symbol.asyncDispose]() {
      await removeWorkspaceContainers(ws.path);
      ws[Symbol.dispose]();
    },
  };
}

describe.skipIf(skipDocker)("the package cache", { timeout: 300_000 }, () => {
  const docker = new Docker();
  let image = "";
  let npm: NpmRegistryStub;
  let pip: PipIndexStub;
  const fake = useFakeApi();

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

  /** npm and pip, plainly: no --prefer-offline, no cache flag; only quiet and no retries. */
  function installCommand(): string {
    return [
      `npm install ${NPM_FIXTURE_PACKAGE} --registry http://${REGISTRY_IP}:${npm.port}/ --no-audit --no-fund --no-update-notifier --fetch-retries=0`,
      `python3 -m pip install ${PIP_FIXTURE_PROJECT} --index-url http://${REGISTRY_IP}:${pip.port}/simple/ --trusted-host ${REGISTRY_IP} --target /workspace/pylib --disable-pip-version-check --no-input --retries 0`,
    ].join(" && ");
  }

  /** One `harness run` whose single tool call installs; resolves its egress lines (stream-json). */
  async function installRun(
    workspace: string,
    extra: string[] = [],
  ): Promise<{ egress: Json[]; stderr: string; ms: number; wallMs: number }> {
    fake.api.enqueue(
      toolUseReply("bash", { command: installCommand() }, "", "toolu_install"),
      textReply("Installed."),
    );
    const started = performance.now();
    const run = await runCli(
      [
        "run",
        "--workspace",
        workspace,
        "--image",
        image,
        "--allow-host",
        `${REGISTRY_IP}:${npm.port}`,
        "--allow-host",
        `${REGISTRY_IP}:${pip.port}`,
        "--allow-private",
        "--output-format",
        "stream-json",
        ...extra,
        "install the packages",
      ],
      { env: fake.env, timeoutMs: 240_000 },
    );
    const wallMs = performance.now() - started;
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Json);
    const toolResult = JSON.stringify(fake.api.requests.at(-1)?.body.messages.at(-1));
    expect(toolResult).not.toMatch(/ERR!|error:/i);
    expect(existsSync(join(workspace, "node_modules", NPM_FIXTURE_PACKAGE, "index.js"))).toBe(true);
    expect(existsSync(join(workspace, "pylib", PIP_FIXTURE_MODULE, "__init__.py"))).toBe(true);
    // The install command's own time, as harness measured it (the run's includes the container).
    const result = lines.find(
      (l) =>
        l["type"] === "user" && (l["harness"] as { tool_name?: string } | undefined)?.tool_name === "bash",
    ) as { harness?: { duration_ms?: number } } | undefined;
    return {
      egress: lines.filter((l) => l["type"] === "system" && l["subtype"] === "egress"),
      stderr: run.stderr,
      ms: result?.harness?.duration_ms ?? Number.NaN,
      wallMs,
    };
  }

  const bytesDown = (records: Json[], port: number) =>
    records.filter((r) => r["port"] === port).reduce((sum, r) => sum + (r["bytes_down"] as number), 0);

  it("a second task in the same workspace downloads nothing from npm and no wheel from pip; another workspace downloads it all", async () => {
    await using first = cacheWorkspace();
    const one = await installRun(first.path);
    // The first install fetched everything: packument and tarball, project page and wheel.
    expect(npm.requests.map((r) => r.url)).toEqual(
      expect.arrayContaining([`/${NPM_FIXTURE_PACKAGE}`, npm.tarballPath]),
    );
    expect(pip.requests.map((r) => r.url)).toEqual(
      expect.arrayContaining([`/simple/${PIP_FIXTURE_PROJECT}/`, pip.wheelPath]),
    );
    expect(bytesDown(one.egress, npm.port)).toBeGreaterThan(npm.tarballBytes);
    const firstPip = bytesDown(one.egress, pip.port);
    // Nothing of the cache in the workspace: it lives in the volume only.
    expect(existsSync(join(first.path, ".npm"))).toBe(false);
    expect(existsSync(join(first.path, ".cache"))).toBe(false);

    // Again in the same workspace: its cache has it all.
    let npmSeen = npm.requests.length;
    let pipSeen = pip.requests.length;
    const two = await installRun(first.path);
    // npm: the packument is still fresh (max-age=300, as the registry says) and the tarball is
    // found by its integrity: no connection at all.
    expect(npm.requests.slice(npmSeen)).toEqual([]);
    expect(two.egress.filter((r) => r["port"] === npm.port)).toEqual([]);
    // pip revalidates the project page on every install (it asks with max-age=0); the answer is a
    // 304 without a body. The wheel comes from pip's HTTP cache.
    const pipAgain = pip.requests.slice(pipSeen).map((r) => r.url);
    expect(pipAgain).not.toContain(pip.wheelPath);
    expect(two.egress.filter((r) => r["port"] === pip.port).every((r) => r["status"] === 304)).toBe(true);
    const secondPip = bytesDown(two.egress, pip.port);
    expect(secondPip).toBeLessThan(firstPip);
    // Headers only: a status line, the cache headers, no body.
    expect(secondPip).toBeLessThan(400 * pipAgain.length + 1);

    // Another workspace of the same user: a cache of its own, so it all comes down again (the cost
    // of one cache per workspace: docs/package-cache.md).
    await using other = cacheWorkspace();
    npmSeen = npm.requests.length;
    pipSeen = pip.requests.length;
    const three = await installRun(other.path);
    expect(npm.requests.slice(npmSeen).map((r) => r.url)).toEqual(
      expect.arrayContaining([`/${NPM_FIXTURE_PACKAGE}`, npm.tarballPath]),
    );
    expect(pip.requests.slice(pipSeen).map((r) => r.url)).toContain(pip.wheelPath);
    expect(bytesDown(three.egress, npm.port)).toBeGreaterThan(npm.tarballBytes);
    const kib = (n: number) => `${n} B`;
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(
      [
        "package cache: bytes down from npm and pip, the install command's time, and the whole run's",
        `  first install (workspace A, new cache): npm ${kib(bytesDown(one.egress, npm.port))}, pip ${kib(firstPip)}; ${s(one.ms)} (run ${s(one.wallMs)})`,
        `  again in workspace A: npm ${kib(bytesDown(two.egress, npm.port))}, pip ${kib(secondPip)} (${pipAgain.length} revalidation); ${s(two.ms)} (run ${s(two.wallMs)})`,
        `  workspace B (its own cache): npm ${kib(bytesDown(three.egress, npm.port))}, pip ${kib(bytesDown(three.egress, pip.port))}; ${s(three.ms)} (run ${s(three.wallMs)})`,
      ].join("\n"),
    );

    // npm's debug logs stay in each container's home: one task's are not in the cache.
    const logs = await runCli([
      "exec",
      "--workspace",
      first.path,
      "--image",
      image,
      "--",
      "ls -A /var/cache/harness/npm",
    ]);
    expect(logs.stdout).not.toContain("_logs");
    expect(logs.stdout).toContain("_cacache");

    // doctor counts the user's caches (one per workspace) and their size together.
    const doctor = await runCli(["doctor", "-w", first.path, "--user", `${UID}`], { timeoutMs: 60_000 });
    expect(doctor.stdout).toMatch(
      new RegExp(`^ok   package cache: uid ${UID}: 2 caches, \\d+(\\.\\d)? KiB \\(one per workspace`, "m"),
    );
  });

  it("keeps to --package-cache-max over all of a user's caches: the least recently used files go, whichever workspace's", async () => {
    await using a = cacheWorkspace();
    await using b = cacheWorkspace();
    const fill = (files: string[]) => ["mkdir -p /var/cache/harness/fill", ...files].join(" && ");
    mkdirSync(join(a.path, "keep"));
    chownSync(join(a.path, "keep"), UID, UID);
    const old = await runCli([
      ...["exec", "--workspace", a.path, "--image", image, "--"],
      fill([
        "head -c 1572864 /dev/urandom > /var/cache/harness/fill/old",
        "touch -d 2020-01-01 /var/cache/harness/fill/old",
        "ln -s /workspace/keep /var/cache/harness/fill/link",
        "touch -h -d 2019-01-01 /var/cache/harness/fill/link",
      ]),
    ]);
    expect(old.code, old.stderr).toBe(0);
    const recent = await runCli([
      ...["exec", "--workspace", b.path, "--image", image, "--"],
      fill(["head -c 1048576 /dev/urandom > /var/cache/harness/fill/new"]),
    ]);
    expect(recent.code, recent.stderr).toBe(0);

    // B's next start, with a bound of 2 MiB over the user's caches: A's old files go, B's stay.
    const bounded = await runCli([
      ...["exec", "--workspace", b.path, "--image", image, "--package-cache-max", "2m", "--"],
      "ls /var/cache/harness/fill",
    ]);
    expect(bounded.code, bounded.stderr).toBe(0);
    expect(bounded.stderr).toMatch(
      new RegExp(`package caches of uid ${UID} over their bound .*removed the 2 least recently used files`),
    );
    expect(bounded.stdout).toBe("new\n");
    const inA = await runCli([
      ...["exec", "--workspace", a.path, "--image", image, "--package-cache-max", "2m", "--"],
      "ls -A /var/cache/harness/fill; du -sk /var/cache/harness | cut -f1",
    ]);
    // The link (oldest) and the old file went; the symlink's target in the workspace was never touched.
    expect(inA.stdout.split("\n")[0]).not.toMatch(/old|link/);
    expect(existsSync(join(a.path, "keep"))).toBe(true);
    // Checked a moment ago against the same bound: A's start did not run the keeper again.
    expect(inA.stderr).not.toMatch(/package cache/);
  });

  it("after a prune took npm's tarballs, a plain npm install downloads them again instead of failing", async () => {
    await using first = cacheWorkspace();
    const reg = `--registry http://${REGISTRY_IP}:${npm.port}/ --no-audit --no-fund --no-update-notifier --fetch-retries=0`;
    const allow = ["--image", image, "--allow-host", `${REGISTRY_IP}:${npm.port}`, "--allow-private"];
    const installed = await runCli([
      "exec",
      "--workspace",
      first.path,
      ...allow,
      "--",
      `npm install ${NPM_FIXTURE_PACKAGE} ${reg}`,
    ]);
    expect(installed.code, installed.stderr).toBe(0);
    // npm's content files the least recently used, then 600 KiB of other files, then npm's index
    // and 500 KiB of recent files: a 1m bound (pruned to 80 %) takes the content and the 600 KiB,
    // and would leave the index naming content that is gone.
    const age = await runCli([
      "exec",
      "--workspace",
      first.path,
      "--image",
      image,
      "--",
      [
        "find /var/cache/harness/npm/_cacache/content-v2 -type f -exec touch -d 2001-01-01 {} +",
        "head -c 614400 /dev/urandom > /var/cache/harness/older && touch -d 2002-01-01 /var/cache/harness/older",
        "head -c 512000 /dev/urandom > /var/cache/harness/recent",
      ].join(" && "),
    ]);
    expect(age.code, age.stderr).toBe(0);

    const seen = npm.requests.length;
    const again = await runCli([
      "exec",
      "--workspace",
      first.path,
      ...allow,
      "--package-cache-max",
      "1m",
      "--",
      `rm -rf node_modules package.json package-lock.json; ls /var/cache/harness/npm/_cacache/content-v2 /var/cache/harness/npm/_cacache/index-v5 2>&1; npm install ${NPM_FIXTURE_PACKAGE} ${reg}`,
    ]);
    expect(again.stderr).toMatch(/package caches of uid \d+ over their bound/);
    expect(again.stdout).toMatch(/No such file or directory/);
    expect(again.code, `${again.stdout}${again.stderr}`).toBe(0);
    expect(npm.requests.slice(seen).map((r) => r.url)).toContain(npm.tarballPath);
    expect(existsSync(join(first.path, "node_modules", NPM_FIXTURE_PACKAGE, "index.js"))).toBe(true);
  });

  it("prunes in harness's own image whatever the sandbox's image; runs without the cache, saying so in one line, when it cannot have it", async () => {
    // The keeper runs as root over the volume: never in the sandbox's image unless harness built it.
    // An image without python3 (or any image not harness's) still gets its cache pruned and mounted.
    await using ws = cacheWorkspace();
    const noPythonImage = await imageWithoutPython();
    const pruned = await runCli([
      ...["exec", "--workspace", ws.path, "--image", noPythonImage, "--package-cache-max", "3g"],
      ...["--", "env"],
    ]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stderr).not.toMatch(/package cache (not pruned|off)/);
    expect(pruned.stdout).toContain("npm_config_cache=/var/cache/harness/npm");
    await removeWorkspaceContainers(ws.path);
    expect((await runCli(["rm", "--cache", "--user", `${UID}`])).code).toBe(0);

    // A volume of that name harness did not make (no label): never mounted, never pruned.
    const foreign = await docker.createVolume({ Name: volumeOf(ws.path) });
    try {
      const refused = await runCli(["exec", "--workspace", ws.path, "--image", image, "--", "env"]);
      expect(refused.code, refused.stderr).toBe(0);
      expect(refused.stderr).toContain(
        `package cache off for this run: a volume named ${volumeOf(ws.path)} exists without harness's labels for this workspace`,
      );
      expect(refused.stdout).not.toContain("npm_config_cache");
    } finally {
      await removeWorkspaceContainers(ws.path);
      await docker.getVolume(foreign.name).remove();
    }
  });

  it("harness rm --cache removes the cache volumes (--workspace: that one's), and only them, once no sandbox holds them", async () => {
    await using ws = cacheWorkspace();
    await using kept = cacheWorkspace();
    const VOLUME = volumeOf(ws.path);
    for (const dir of [ws.path, kept.path]) {
      const made = await runCli(["exec", "--workspace", dir, "--image", image, "--", "true"]);
      expect(made.code, made.stderr).toBe(0);
    }
    await docker.getVolume(VOLUME).inspect();

    // The workspace's long-lived container still mounts it: refused, and the message says which.
    const held = await runCli(["rm", "--cache", "--workspace", ws.path]);
    expect(held.code).not.toBe(0);
    expect(held.stderr).toContain(`${VOLUME} is mounted by`);
    await docker.getVolume(VOLUME).inspect();

    await removeWorkspaceContainers(ws.path);
    // A keeper a killed harness left behind (created, never removed) holds it too: that one goes.
    const leftover = await docker.createContainer({
      Image: image,
      Cmd: ["true"],
      Labels: { [LABEL_PACKAGE_CACHE]: "keeper" },
      HostConfig: { Mounts: [{ Type: "volume", Source: VOLUME, Target: "/cache" }] },
    });
    const other = await docker.createVolume({ Name: `harness-test-not-cache-${UID}` });
    try {
      const rm = await runCli(["rm", "--cache", "--workspace", ws.path]);
      expect(rm.stdout).toBe(`removed volume ${VOLUME}\n`);
      expect(rm.code).toBe(0);
      await expect(docker.getVolume(VOLUME).inspect()).rejects.toMatchObject({ statusCode: 404 });
      await expect(leftover.inspect()).rejects.toMatchObject({ statusCode: 404 });
      // Only that workspace's cache: the other workspace's, and another volume, stay.
      await docker.getVolume(volumeOf(kept.path)).inspect();
      await docker.getVolume(other.name).inspect();
      await removeWorkspaceContainers(kept.path);
      const all = await runCli(["rm", "--cache", "--user", `${UID}`]);
      expect(all.stdout).toBe(`removed volume ${volumeOf(kept.path)}\n`);
      const again = await runCli(["rm", "--cache", "--user", `${UID}`]);
      expect(again.stdout).toBe("no package cache to remove\n");
    } finally {
      await docker
        .getVolume(other.name)
        .remove()
        .catch(() => {});
    }
  });

  it("removes, when it checks the bound, the caches of workspaces that are gone and the one cache once shared by them all", async () => {
    await using ws = cacheWorkspace();
    const gone = cacheWorkspace();
    const goneVolume = volumeOf(gone.path);
    const made = await runCli(["exec", "--workspace", gone.path, "--image", image, "--", "true"]);
    expect(made.code, made.stderr).toBe(0);
    await gone[Symbol.asyncDispose]();
    await docker.getVolume(goneVolume).inspect();
    const shared = `harness-package-cache-${UID}`;
    await docker.createVolume({
      Name: shared,
      Labels: { "dev.harness.managed": "true", [LABEL_PACKAGE_CACHE]: `${UID}` },
    });
    // Another bound than any before: the check is due.
    const run = await runCli([
      ...["exec", "--workspace", ws.path, "--image", image, "--package-cache-max", "5g", "--"],
      "true",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      `removed ${shared}, the package cache once shared by all of uid ${UID}'s workspaces`,
    );
    await expect(docker.getVolume(shared).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker.getVolume(goneVolume).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await docker.getVolume(volumeOf(ws.path)).inspect();
  });
});
