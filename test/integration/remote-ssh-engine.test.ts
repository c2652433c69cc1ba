/**
 * A "remote" engine over ssh://: test/support/ssh-engine.ts, Debian's sshd on loopback with keys the
 * test makes, in front of the local engine. harness reaches it as the docker CLI does, with `ssh HOST
 * docker system dial-stdio` per connection, and sees only ssh://, as with an engine on another host.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxError } from "../../src/errors.js";
import { DockerSandbox, type DockerSandboxOptions } from "../../src/sandbox/docker/docker-sandbox.js";
import { connectEngine } from "../../src/sandbox/docker/engine/docker-client.js";
import type { ExecResult } from "../../src/sandbox/sandbox.js";
import { conformanceSuite } from "../support/conformance.js";
import { skipDocker } from "../support/docker-available.js";
import { writeDockerContext } from "../support/docker-context-store.js";
import { runCli } from "../support/run-cli.js";
import { type SshEngine, startSshEngine } from "../support/ssh-engine.js";
import { skipSsh } from "../support/sshd-available.js";
import { makeWorkspace } from "../support/workspace.js";

let engine: SshEngine;

function openRemote(workspace: string, extra: Partial<DockerSandboxOptions> = {}): Promise<DockerSandbox> {
  return DockerSandbox.open({ workspace, dockerEnv: { ...engine.env }, ...extra });
}

/** A command that prints, then sleeps long enough for the test to cut the connection under it. */
const LONG_COMMAND = "echo started; sleep 30; echo late";

type Settled = { result: ExecResult } | { error: unknown };

/**
 * Starts LONG_COMMAND and resolves once its first line arrived, with the call still running (in an
 * object: an async function would otherwise wait for the returned promise itself).
 */
async function startLongCommand(sandbox: DockerSandbox): Promise<{ call: Promise<Settled> }> {
  let started: () => void = () => {};
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const call = sandbox
    .exec(LONG_COMMAND, {
      timeoutMs: 120_000,
      onOutput: (_stream, chunk) => {
        if (chunk.toString().includes("started")) started();
      },
    })
    .then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
  await Promise.race([running, call]);
  return { call };
}

/** A dropped call ends as a SandboxError, or as a failed result cut short (no "late"): never a hang. */
function expectCutShort(settled: Settled): void {
  if ("error" in settled) {
    expect(settled.error).toBeInstanceOf(SandboxError);
    expect((settled.error as Error).message).not.toContain("\n");
  } else {
    expect(settled.result.failed).toBe(true);
    expect(settled.result.stdout).not.toContain("late");
  }
}

/** Runs `echo again` until it works: the engine was just given back, and the client may still hold off. */
async function execWhenBack(sandbox: DockerSandbox): Promise<ExecResult> {
  let last: unknown;
  for (let attempt = 0; attempt < 30; attempt++) {
    try {
      return await sandbox.exec("echo again", { timeoutMs: 30_000 });
    } catch (error) {
      last = error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  throw last;
}

describe.skipIf(skipDocker || skipSsh)(
  "a remote engine over ssh:// (sshd on loopback)",
  { timeout: 240_000 },
  () => {
    beforeAll(async () => {
      engine = await startSshEngine();
    });
    afterAll(async () => {
      await engine?.close();
    });

    conformanceSuite("Docker over ssh://", openRemote, {
      timeoutMs: 240_000,
      differences: {
        "bind mode": "the workspace is not on the engine's machine: harness uses copy isolation instead",
      },
    });

    it("switches to copy isolation by itself and says so in one line", async () => {
      using ws = makeWorkspace();
      const lines: string[] = [];
      await using sandbox = await openRemote(ws.path, { onProgress: (line) => lines.push(line) });
      expect(sandbox.description.isolation).toBe("copy");
      expect(lines.filter((line) => line.includes("remote"))).toEqual([
        `the engine at ${engine.host} (DOCKER_HOST) is remote: the workspace is copied in (copy isolation) instead of mounted`,
      ]);
    });

    it("says in one line when ssh refuses the login", async () => {
      const host = engine.host.replace(/^ssh:\/\/[^@]+@/, "ssh://nobody-here@");
      const error = await connectEngine({ ...engine.env, DOCKER_HOST: host }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SandboxError);
      const message = (error as Error).message;
      expect(message).not.toContain("\n");
      expect(message).toMatch(
        /^Docker is not reachable at ssh:\/\/nobody-here@127\.0\.0\.1:\d+ from DOCKER_HOST \(ssh to .* ended \(exit 255\): .*Permission denied.*ssh HOST docker system dial-stdio/,
      );
      using ws = makeWorkspace();
      const cli = await runCli(["exec", "-w", ws.path, "--", "echo never"], {
        env: { ...engine.env, DOCKER_HOST: host },
      });
      expect(cli).toMatchObject({ code: 1, stdout: "" });
      expect(cli.stderr).toBe(`harness: ${message}\n`);
    });

    it("ssh killed mid-command: a SandboxError or a cut-short result, never a hang; the next call works", async () => {
      using ws = makeWorkspace();
      await using sandbox = await openRemote(ws.path);
      const { call } = await startLongCommand(sandbox);
      expect(engine.killClients()).toBeGreaterThan(0);
      expectCutShort(await call);
      expect(await execWhenBack(sandbox)).toMatchObject({ stdout: "again\n", exitCode: 0 });
    });

    it("sshd gone mid-command: a SandboxError or a cut-short result, never a hang; works once it is back", async () => {
      using ws = makeWorkspace();
      await using sandbox = await openRemote(ws.path);
      const { call } = await startLongCommand(sandbox);
      await engine.drop();
      try {
        expectCutShort(await call);
        await expect(sandbox.exec("echo meanwhile", { timeoutMs: 30_000 })).rejects.toThrow(SandboxError);
      } finally {
        await engine.restore();
      }
      expect(await execWhenBack(sandbox)).toMatchObject({ stdout: "again\n", exitCode: 0 });
    });

    it("a host that stops answering mid-command: one SandboxError, the later calls not each waiting out ssh's timeout", async () => {
      using ws = makeWorkspace();
      await using sandbox = await openRemote(ws.path);
      const { call } = await startLongCommand(sandbox);
      engine.freeze();
      let settled: Settled;
      try {
        settled = await call;
      } finally {
        engine.thaw();
      }
      expect(settled).toMatchObject({ error: expect.any(SandboxError) });
      const { message } = (settled as { error: Error }).error;
      expect(message).not.toContain("\n");
      // ssh's keepalive or connect timeout noticed it once; the calls after that were told at once.
      expect(message).toMatch(/timed out|Timeout, server/);
      expect(message).toContain("not tried again for");
      expect(await execWhenBack(sandbox)).toMatchObject({ stdout: "again\n", exitCode: 0 });
    });

    it("harness ps and rm reach the engine over ssh", async () => {
      using ws = makeWorkspace();
      const sandbox = await openRemote(ws.path);
      const ps = await runCli(["ps"], { env: engine.env });
      expect(ps.stdout).toContain(sandbox.containerId.slice(0, 12));
      expect(ps.code).toBe(0);
      const rm = await runCli(["rm", "-w", ws.path], { env: engine.env });
      expect(rm.stdout).toContain(`removed ${sandbox.containerId.slice(0, 12)}`);
      expect(rm.code).toBe(0);
      await sandbox.stop().catch(() => {});
    });

    describe("a Docker context whose endpoint is ssh://", () => {
      let home: string;
      beforeAll(() => {
        home = mkdtempSync(join(tmpdir(), "harness-context-home-"));
        mkdirSync(join(home, ".docker"));
        writeDockerContext(join(home, ".docker"), { name: "ssh-remote", host: engine.host });
      });
      afterAll(() => rmSync(home, { recursive: true, force: true }));

      it("is selected by --context, and harness runs the command through it", async () => {
        using ws = makeWorkspace();
        const run = await runCli(
          ["exec", "--context", "ssh-remote", "-w", ws.path, "--", "echo via-context"],
          {
            env: { HOME: home, DOCKER_HOST: "", PATH: engine.env.PATH },
          },
        );
        expect(run.stdout).toBe("via-context\n");
        expect(run.stderr).toContain(
          `the engine at ${engine.host} (context 'ssh-remote' (--context)) is remote`,
        );
        expect(run.code).toBe(0);
      });
    });
  },
);
