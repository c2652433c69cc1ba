/**
 * A "remote" engine over tcp:// + TLS: test/support/tls-engine.ts, a TLS proxy on loopback in front
 * of the local engine. harness sees only tcp:// with certificates, as with an engine on another host.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, SandboxError } from "../../src/errors.js";
import { DockerSandbox, type DockerSandboxOptions } from "../../src/sandbox/docker/docker-sandbox.js";
import { connectEngine } from "../../src/sandbox/docker/engine/docker-client.js";
import { conformanceSuite } from "../support/conformance.js";
import { skipDocker } from "../support/docker-available.js";
import { writeDockerContext } from "../support/docker-context-store.js";
import { runCli } from "../support/run-cli.js";
import { startTlsEngine, type TlsEngine } from "../support/tls-engine.js";
import { makeWorkspace } from "../support/workspace.js";

let engine: TlsEngine;

function openRemote(workspace: string, extra: Partial<DockerSandboxOptions> = {}): Promise<DockerSandbox> {
  return DockerSandbox.open({ workspace, dockerEnv: { ...engine.env }, ...extra });
}

describe.skipIf(skipDocker)(
  "a remote engine over tcp:// + TLS (loopback proxy)",
  { timeout: 120_000 },
  () => {
    beforeAll(async () => {
      engine = await startTlsEngine();
    });
    afterAll(async () => {
      await engine?.close();
    });

    conformanceSuite("Docker over tcp:// + TLS", openRemote, {
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

    it("refuses --isolation bind and allowlist mode before creating anything", async () => {
      using ws = makeWorkspace();
      await expect(openRemote(ws.path, { isolation: "bind", isolationExplicit: true })).rejects.toThrow(
        ConfigError,
      );
      await expect(openRemote(ws.path, { egress: { allowHosts: ["example.com"] } })).rejects.toThrow(
        /^--allow-host\/--allow need a local engine/,
      );
    });

    it("says in one line that a wrong or missing client certificate was refused", async () => {
      for (const certPath of [engine.wrongCertPath, engine.noClientCertPath]) {
        const error = await connectEngine({ ...engine.env, DOCKER_CERT_PATH: certPath }).catch(
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(SandboxError);
        const message = (error as Error).message;
        expect(message).not.toContain("\n");
        expect(message).toMatch(
          new RegExp(`^Docker is not reachable at ${engine.host} from DOCKER_HOST .*TLS files`),
        );
      }
    });

    it("a connection dropped mid-command is a SandboxError or a result, never a hang; the next call works", async () => {
      using ws = makeWorkspace();
      await using sandbox = await openRemote(ws.path);
      const call = sandbox.exec("echo started; sleep 20; echo late", { timeoutMs: 60_000 }).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
      await new Promise((resolve) => setTimeout(resolve, 2000));
      await engine.drop();
      const settled = await call;
      // Settled before the command's `sleep 20` was over (no "late"), or as a SandboxError: not a hang.
      if ("error" in settled) expect(settled.error).toBeInstanceOf(SandboxError);
      else expect(settled.result.stdout).not.toContain("late");
      await engine.restore();
      expect(await sandbox.exec("echo again", { timeoutMs: 30_000 })).toMatchObject({
        stdout: "again\n",
        exitCode: 0,
      });
    });

    it("harness ps and rm reach the engine over TLS", async () => {
      using ws = makeWorkspace();
      const sandbox = await openRemote(ws.path);
      const env = { DOCKER_HOST: engine.host, DOCKER_TLS_VERIFY: "1", DOCKER_CERT_PATH: engine.certPath };
      const ps = await runCli(["ps"], { env });
      expect(ps.code).toBe(0);
      expect(ps.stdout).toContain(sandbox.containerId.slice(0, 12));
      const rm = await runCli(["rm", "-w", ws.path], { env });
      expect(rm).toMatchObject({ code: 0 });
      expect(rm.stdout).toContain(`removed ${sandbox.containerId.slice(0, 12)}`);
      await expect(sandbox.exec("true")).rejects.toThrow(SandboxError);
      await sandbox.stop().catch(() => {});
    });

    describe("a Docker context with the engine's TLS files", () => {
      let home: string;
      beforeAll(() => {
        home = mkdtempSync(join(tmpdir(), "harness-context-home-"));
        mkdirSync(join(home, ".docker"));
        writeDockerContext(join(home, ".docker"), {
          name: "tls-remote",
          host: engine.host,
          certDir: engine.certPath,
        });
      });
      afterAll(() => rmSync(home, { recursive: true, force: true }));

      it("is selected by --context and by DOCKER_CONTEXT", async () => {
        using ws = makeWorkspace();
        const byFlag = await runCli(
          ["exec", "--context", "tls-remote", "-w", ws.path, "--", "echo via-flag"],
          {
            env: { HOME: home, DOCKER_HOST: "" },
          },
        );
        expect(byFlag.stdout).toBe("via-flag\n");
        expect(byFlag.stderr).toContain(
          `the engine at ${engine.host} (context 'tls-remote' (--context)) is remote`,
        );
        expect(byFlag.code).toBe(0);
        const byEnv = await runCli(["exec", "-w", ws.path, "--", "echo via-env"], {
          env: { HOME: home, DOCKER_HOST: "", DOCKER_CONTEXT: "tls-remote" },
        });
        expect(byEnv.stdout).toBe("via-env\n");
        expect(byEnv.stderr).toContain("(context 'tls-remote' (DOCKER_CONTEXT)) is remote");
        expect(byEnv.code).toBe(0);
      });
    });
  },
);
