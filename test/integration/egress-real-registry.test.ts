/**
 * Opt-in (HARNESS_TEST_REAL_REGISTRY=1): allowlist mode against the registry the host's npm is set
 * to, through the real resolver, as `harness run --allow npm` would. Not in CI: it needs that
 * registry to be reachable. No registry name is written here; npm on the host is asked.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { allowPresetHosts } from "../../src/allow-presets/allow-presets.js";
import { ensureSandboxImage } from "../../src/sandbox/docker/container/image.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { connectDocker } from "../../src/sandbox/docker/engine/docker-client.js";
import type { EgressRecord } from "../../src/sandbox/sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

const enabled = process.env["HARNESS_TEST_REAL_REGISTRY"] === "1";

function hostNpmConfig(key: string): string {
  return execFileSync("npm", ["config", "get", key], { cwd: "/", encoding: "utf8" }).trim();
}

/**
 * The gateway does not touch TLS, so where the host reaches its registry through a TLS-inspecting
 * proxy the sandbox's npm needs the same CA the host's npm trusts: copied into the workspace and
 * given with --cafile. Empty when the host's npm trusts only the public roots.
 */
function trustHostCa(workspace: string): string {
  const configured = hostNpmConfig("cafile");
  const file = /^(null|undefined|)$/.test(configured) ? process.env["NODE_EXTRA_CA_CERTS"] : configured;
  if (file === undefined || !existsSync(file)) return "";
  copyFileSync(file, join(workspace, "host-ca.pem"));
  return "--cafile /workspace/host-ca.pem";
}

describe.skipIf(skipDocker || !enabled)(
  "allowlist mode with the host's real npm registry",
  { timeout: 300_000 },
  () => {
    it("npm view answers through the gateway with only the registry allowed", async () => {
      // The same entries `--allow npm` gives; the URL itself for the sandbox's npm, whose own default
      // may differ from the host's configuration.
      const allowHosts = allowPresetHosts({ kind: "npm" }, process.env);
      const registry = execFileSync("npm", ["config", "get", "registry"], {
        cwd: "/",
        encoding: "utf8",
      }).trim();
      const docker = await connectDocker();
      const image = await ensureSandboxImage(docker);
      using ws = makeWorkspace();
      await using sandbox = await DockerSandbox.open({
        workspace: ws.path,
        image,
        removeOnStop: true,
        egress: { allowHosts },
      });
      const ca = trustHostCa(ws.path);
      const records: EgressRecord[] = [];
      sandbox.egress?.subscribe((record) => records.push(record));

      const result = await sandbox.exec(
        `npm view semver version --registry '${registry}' --no-update-notifier --fetch-retries=0 ${ca}`,
        { callId: "toolu_real_registry", timeoutMs: 120_000 },
      );
      expect(result, result.stderr).toMatchObject({ exitCode: 0, egressDenied: [] });
      expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
      const host = new URL(registry).hostname;
      // A record arrives when its connection closes, which may be just after npm exited.
      const mine = await vi.waitFor(() => {
        const found = records.filter((r) => r.callId === "toolu_real_registry");
        expect(found.length).toBeGreaterThan(0);
        return found;
      });
      expect(mine.every((r) => r.allowed && r.host === host)).toBe(true);
    });
  },
);
