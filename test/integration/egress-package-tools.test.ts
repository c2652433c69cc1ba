/**
 * Allowlist mode with the real tools an agent uses: npm, pip, git and curl inside the sandbox reach
 * origins on host loopback only through harness's gateway (the container has no network but `lo`).
 * The origins go by documentation names that the injected resolver maps to 127.0.0.1; no real DNS.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ensureSandboxImage } from "../../src/sandbox/docker/container/image.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { connectDocker } from "../../src/sandbox/docker/engine/docker-client.js";
import type { EgressRecord, ExecResult } from "../../src/sandbox/sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { GIT_FIXTURE_README, type GitHttpStub, startGitHttpStub } from "../support/egress/git-http-stub.js";
import { type LoopbackLookup, loopbackLookup } from "../support/egress/loopback-lookup.js";
import {
  NPM_FIXTURE_EXPORT,
  NPM_FIXTURE_PACKAGE,
  type NpmRegistryStub,
  startNpmRegistryStub,
} from "../support/egress/npm-registry-stub.js";
import {
  PIP_FIXTURE_MODULE,
  PIP_FIXTURE_PROJECT,
  PIP_FIXTURE_VALUE,
  type PipIndexStub,
  startPipIndexStub,
} from "../support/egress/pip-index-stub.js";
import { startTlsOrigin, TLS_FIXTURE_BODY, type TlsOrigin } from "../support/egress/tls-origin.js";
import { makeWorkspace } from "../support/workspace.js";

const REGISTRY = "registry.example.org";
const PYPI = "pypi.example.org";
const GIT = "git.example.org";
const SECURE = "secure.example.org";
/** Resolvable (so only the allowlist can stop it), but never allowed. */
const UNLISTED = "unlisted.example.org";

/** npm and pip retry and back off on failures; a test must see the first answer, fast. */
const QUIET_NPM = "--no-audit --no-fund --no-update-notifier --fetch-retries=0";
const QUIET_PIP = "--no-cache-dir --disable-pip-version-check --no-input --retries 0 --timeout 30";

describe.skipIf(skipDocker)("allowlist mode with real package tools", { timeout: 300_000 }, () => {
  let ws: ReturnType<typeof makeWorkspace>;
  let npm: NpmRegistryStub;
  let pip: PipIndexStub;
  let git: GitHttpStub;
  let tls: TlsOrigin;
  let resolver: LoopbackLookup;
  let sandbox: DockerSandbox;
  const records: EgressRecord[] = [];
  let calls = 0;

  /** Runs `command` under a fresh call id; returns the result and that id. */
  async function run(command: string): Promise<{ result: ExecResult; callId: string }> {
    calls += 1;
    const callId = `toolu_egress_${calls}`;
    const result = await sandbox.exec(command, { callId, timeoutMs: 180_000 });
    return { result, callId };
  }

  /**
   * The records of one call, once `done` holds for them: a record arrives when its connection
   * closes, which may be a moment after the client exited.
   */
  async function recordsOf(callId: string, done: (mine: EgressRecord[]) => boolean): Promise<EgressRecord[]> {
    return vi.waitFor(
      () => {
        const mine = records.filter((r) => r.callId === callId);
        if (!done(mine)) throw new Error(`records of ${callId} so far: ${JSON.stringify(mine)}`);
        return mine;
      },
      { timeout: 10_000, interval: 50 },
    );
  }

  beforeAll(async () => {
    const docker = await connectDocker();
    const image = await ensureSandboxImage(docker);
    ws = makeWorkspace();
    [npm, pip, git, tls] = await Promise.all([
      startNpmRegistryStub(REGISTRY),
      startPipIndexStub(PYPI),
      startGitHttpStub(GIT),
      startTlsOrigin(SECURE),
    ]);
    writeFileSync(join(ws.path, "origin-cert.pem"), tls.certPem, { mode: 0o644 });
    resolver = loopbackLookup([REGISTRY, PYPI, GIT, SECURE, UNLISTED]);
    sandbox = await DockerSandbox.open({
      workspace: ws.path,
      image,
      removeOnStop: true,
      egress: {
        allowHosts: [
          `${REGISTRY}:${npm.port}`,
          `${PYPI}:${pip.port}`,
          `${GIT}:${git.port}`,
          `${SECURE}:${tls.port}`,
        ],
        // The origins listen on loopback, which the gateway refuses unless told otherwise.
        allowPrivate: true,
      },
      egressLookup: resolver.lookup,
    });
    sandbox.egress?.subscribe((record) => records.push(record));
  });

  afterAll(async () => {
    await sandbox?.stop();
    await Promise.all([npm, pip, git, tls].map((origin) => origin?.close()));
    ws?.[Symbol.dispose]();
  });

  it("npm installs a package from an allowed registry, packument and tarball through the gateway", async () => {
    const { result, callId } = await run(
      `npm install ${NPM_FIXTURE_PACKAGE} --registry http://${REGISTRY}:${npm.port}/ ${QUIET_NPM}`,
    );
    expect(result, result.stderr).toMatchObject({ exitCode: 0, egressDenied: [] });
    const installed = join(ws.path, "node_modules", NPM_FIXTURE_PACKAGE, "index.js");
    expect(existsSync(installed)).toBe(true);
    const required = await run(`node -e 'console.log(require("${NPM_FIXTURE_PACKAGE}"))'`);
    expect(required.result.stdout).toBe(`${NPM_FIXTURE_EXPORT}\n`);

    // The origin saw both requests by the registry's name, in origin-form: a proxy forwarded them.
    expect(npm.requests.map((r) => [r.method, r.url, r.host])).toEqual(
      expect.arrayContaining([
        ["GET", `/${NPM_FIXTURE_PACKAGE}`, `${REGISTRY}:${npm.port}`],
        ["GET", npm.tarballPath, `${REGISTRY}:${npm.port}`],
      ]),
    );
    const mine = await recordsOf(callId, (m) => m.some((r) => r.bytesDown >= npm.tarballBytes));
    for (const record of mine) {
      expect(record).toMatchObject({
        host: REGISTRY,
        port: npm.port,
        method: "GET",
        allowed: true,
        address: "127.0.0.1",
        status: 200,
      });
    }
    expect(resolver.asked).toContain(REGISTRY);
  });

  it("pip installs a wheel from an allowed simple index", async () => {
    // pip only trusts plain HTTP from localhost, hence --trusted-host for the index's name.
    const { result, callId } = await run(
      `python3 -m pip install ${PIP_FIXTURE_PROJECT} --index-url http://${PYPI}:${pip.port}/simple/ --trusted-host ${PYPI} --target /workspace/pylib ${QUIET_PIP}`,
    );
    expect(result, result.stderr).toMatchObject({ exitCode: 0, egressDenied: [] });
    expect(readFileSync(join(ws.path, "pylib", PIP_FIXTURE_MODULE, "__init__.py"), "utf8")).toContain(
      PIP_FIXTURE_VALUE,
    );
    const imported = await run(
      `PYTHONPATH=pylib python3 -c 'import ${PIP_FIXTURE_MODULE}; print(${PIP_FIXTURE_MODULE}.VALUE)'`,
    );
    expect(imported.result.stdout).toBe(`${PIP_FIXTURE_VALUE}\n`);

    expect(pip.requests.map((r) => r.url)).toEqual(
      expect.arrayContaining([`/simple/${PIP_FIXTURE_PROJECT}/`, pip.wheelPath]),
    );
    expect(
      pip.requests.every((r) => r.userAgent.startsWith("pip/") && r.host === `${PYPI}:${pip.port}`),
    ).toBe(true);
    const mine = await recordsOf(callId, (m) => m.filter((r) => r.status === 200).length >= 2);
    expect(mine.every((r) => r.allowed && r.host === PYPI && r.method === "GET")).toBe(true);
  });

  it("git clones over HTTP from an allowed host", async () => {
    const { result, callId } = await run(`git clone -q http://${GIT}:${git.port}/repo.git cloned`);
    expect(result, result.stderr).toMatchObject({ exitCode: 0, egressDenied: [] });
    expect(readFileSync(join(ws.path, "cloned", "README.md"), "utf8")).toBe(GIT_FIXTURE_README);

    expect(git.requests[0]).toMatchObject({
      url: "/repo.git/info/refs?service=git-upload-pack",
      host: `${GIT}:${git.port}`,
    });
    expect(git.requests.every((r) => r.userAgent.startsWith("git/"))).toBe(true);
    const mine = await recordsOf(callId, (m) => m.some((r) => r.status === 200));
    expect(mine.every((r) => r.allowed && r.host === GIT && r.port === git.port)).toBe(true);
    expect(mine.reduce((sum, r) => sum + r.bytesDown, 0)).toBeGreaterThan(0);
  });

  it("curl reaches an HTTPS origin through a CONNECT tunnel and verifies its certificate end to end", async () => {
    const { result, callId } = await run(`curl -sS --cacert origin-cert.pem https://${SECURE}:${tls.port}/`);
    expect(result, result.stderr).toMatchObject({ exitCode: 0, stdout: TLS_FIXTURE_BODY, egressDenied: [] });
    expect(tls.requests).toEqual([
      expect.objectContaining({ method: "GET", url: "/", host: `${SECURE}:${tls.port}` }),
    ]);
    const [record, ...others] = await recordsOf(callId, (m) => m.length > 0);
    expect(others).toEqual([]);
    expect(record).toMatchObject({ host: SECURE, port: tls.port, method: "CONNECT", allowed: true });
    // The TLS handshake alone is more than a few hundred bytes each way.
    expect(record?.bytesUp).toBeGreaterThan(200);
    expect(record?.bytesDown).toBeGreaterThan(200);
  });

  it("a tool whose host is not allowed fails, and the result names the host and the flag", async () => {
    const npmSeen = npm.requests.length;
    const tlsSeen = tls.requests.length;
    // The registry stub's own port, under a name not on the allowlist: only the name can refuse it.
    const { result, callId } = await run(
      `npm view ${NPM_FIXTURE_PACKAGE} version --registry http://${UNLISTED}:${npm.port}/ ${QUIET_NPM}`,
    );
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(/403/);
    expect(result.egressDenied).toEqual([
      expect.objectContaining({
        host: UNLISTED,
        port: npm.port,
        reason: expect.stringContaining("--allow-host"),
      }),
    ]);
    const https = await run(`curl -sS --cacert origin-cert.pem https://${UNLISTED}:${tls.port}/`);
    expect(https.result.exitCode).not.toBe(0);
    expect(https.result.egressDenied).toEqual([expect.objectContaining({ host: UNLISTED, port: tls.port })]);

    const denied = await recordsOf(callId, (m) => m.length > 0);
    expect(denied.every((r) => !r.allowed && r.host === UNLISTED && r.status === 403)).toBe(true);
    const tunnel = await recordsOf(https.callId, (m) => m.length > 0);
    expect(tunnel).toEqual([expect.objectContaining({ method: "CONNECT", allowed: false, status: 403 })]);
    // Refused on the name: never resolved, and the origin behind it never saw a byte.
    expect(resolver.asked).not.toContain(UNLISTED);
    expect(npm.requests.length).toBe(npmSeen);
    expect(tls.requests.length).toBe(tlsSeen);
  });
});
