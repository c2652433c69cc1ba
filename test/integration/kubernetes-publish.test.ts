/**
 * `--publish` on `--engine kubernetes`, on the cluster in HARNESS_TEST_KUBECONFIG: the shared set
 * (test/support/publish-conformance.ts), then what only a pod shows: each connection one exec of the
 * forwarder as the workspace owner, the pod keeping only `lo` and no port of its own (read from the
 * API server), a connection cut and its record out at stop, a busy host port refused with no pod left.
 */
import { realpathSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import type { KubernetesSandbox } from "../../src/sandbox/kubernetes/kubernetes-sandbox.js";
import { listHarnessPods } from "../../src/sandbox/kubernetes/pod/pod-registry.js";
import type { PublishRecord } from "../../src/sandbox/sandbox.js";
import {
  openTestSandbox,
  skipKubernetes,
  TEST_NAMESPACE,
  testCluster,
} from "../support/kubernetes-available.js";
import { accepts, ECHO_SERVER, freePort, startInSandbox, until } from "../support/publish-client.js";
import { publishConformance } from "../support/publish-conformance.js";
import { makeWorkspace, TEST_UID } from "../support/workspace.js";

const open = openTestSandbox;
const cluster = testCluster;

/** The forwarders running in the pod now, as "ruid euid" rows (seen by a command, as the workspace owner). */
async function forwarders(sandbox: KubernetesSandbox): Promise<string[] | undefined> {
  // The bracket keeps this command's own line from matching; port-forward.py's docstring is in its
  // argv. Left out: run-as.py (root for the moment before it execs the forwarder, the forwarder's
  // text among its arguments), caught there now and then by a loaded machine.
  const ps = await sandbox.exec(
    "ps -ww -eo ruid=,euid=,args= | grep '[O]ne connection of a published port' | grep -v 'Runs one program as the sandbox user' | awk '{print $1, $2}'",
  );
  const rows = ps.stdout.split("\n").filter((row) => row.trim() !== "");
  return rows.length > 0 ? rows : undefined;
}

publishConformance({
  title: "published ports on Kubernetes",
  skip: skipKubernetes,
  open: (workspace, publish) => open(workspace, { publish }),
  more: ({ sandbox, echoHost }) => {
    it("runs each connection's forwarder as the workspace owner, not root", async () => {
      const socket = connect({ host: "127.0.0.1", port: echoHost() });
      socket.on("error", () => {});
      try {
        const rows = await until(() => forwarders(sandbox()), "the forwarder in the pod");
        for (const row of rows) expect(row).toBe(`${TEST_UID} ${TEST_UID}`);
      } finally {
        socket.destroy();
      }
    });

    it("leaves the pod without a network: only lo, no container port, not the host's network", async () => {
      expect((await sandbox().exec("ls /sys/class/net")).stdout).toBe("lo\n");
      const pod = await cluster().core.readNamespacedPod({
        name: sandbox().podName,
        namespace: TEST_NAMESPACE,
      });
      expect(pod.spec?.hostNetwork ?? false).toBe(false);
      for (const container of pod.spec?.containers ?? []) expect(container.ports ?? []).toEqual([]);
    });
  },
});

describe.skipIf(skipKubernetes)(
  "published ports on Kubernetes when the sandbox stops, or cannot listen",
  { timeout: 180_000 },
  () => {
    it("stops listening, and cuts a connection still open, when the sandbox stops", async () => {
      using ws = makeWorkspace();
      const hostPort = await freePort();
      const sandbox = await open(ws.path, { publish: [{ port: 9000, hostPort }] });
      const records: PublishRecord[] = [];
      sandbox.published?.subscribe((record) => records.push(record));
      try {
        await startInSandbox(sandbox, ECHO_SERVER(9000), 9000);
        const open = connect({ host: "127.0.0.1", port: hostPort });
        const closed = new Promise((resolve) => open.on("close", resolve));
        open.on("error", () => {});
        await until(() => forwarders(sandbox), "the forwarder");
        await sandbox.stop();
        await closed;
        expect(await accepts(hostPort)).toBe(false);
        // Its record was out before stop returned.
        expect(records.map((r) => r.port)).toEqual([9000]);
      } finally {
        await sandbox.stop();
      }
    });

    it("refuses, in one line naming the port, a host port already in use, and leaves no pod", async () => {
      using ws = makeWorkspace();
      const busy = createServer();
      await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
      const { port } = busy.address() as AddressInfo;
      try {
        const error = await open(ws.path, { publish: [{ port: 8000, hostPort: port }] }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as Error).message).not.toContain("\n");
        expect((error as Error).message).toContain(`127.0.0.1:${port} is in use`);
        expect(await listHarnessPods(cluster(), realpathSync(ws.path))).toEqual([]);
      } finally {
        await new Promise((resolve) => busy.close(resolve));
      }
    });
  },
);
