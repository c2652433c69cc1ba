/**
 * The built CLI with `--engine kubernetes` on the cluster in HARNESS_TEST_KUBECONFIG: exec's exit
 * code and streams, copy mode's review and --apply, the pod kept for the next session, doctor, ps,
 * and bind refused in one line.
 */
import { chownSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { connectCluster } from "../../src/sandbox/kubernetes/api/kube-client.js";
import { listHarnessPods } from "../../src/sandbox/kubernetes/pod/pod-registry.js";
import { skipKubernetes, TEST_NAMESPACE, testKubeconfig } from "../support/kubernetes-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";

const env = () => ({ KUBECONFIG: testKubeconfig ?? "", HARNESS_NAMESPACE: TEST_NAMESPACE });

describe.skipIf(skipKubernetes)("the CLI with --engine kubernetes", { timeout: 120_000 }, () => {
  it("exec: exit code, stdout and stderr apart, changes shown and applied with --apply, the pod kept idle", async () => {
    using ws = makeWorkspace();
    writeFileSync(join(ws.path, "in.txt"), "from the host\n");
    if (process.getuid?.() === 0) chownSync(join(ws.path, "in.txt"), TEST_UID, TEST_GID);
    const run = await runCli(
      [
        "exec",
        "--engine",
        "kubernetes",
        "-w",
        ws.path,
        "--apply",
        "--",
        "cat in.txt; echo err >&2; echo back > out.txt; exit 7",
      ],
      { env: env() },
    );
    expect(run.code).toBe(7);
    expect(run.stdout).toBe("from the host\n");
    expect(run.stderr).toMatch(/^err$/m);
    expect(run.stderr).toMatch(/A out\.txt/);
    expect(readFileSync(join(ws.path, "out.txt"), "utf8")).toBe("back\n");
    const cluster = connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });
    const left = await listHarnessPods(cluster, realpathSync(ws.path));
    expect(left.map((pod) => pod.status)).toEqual([expect.stringMatching(/^Running, kept, idle/)]);
    await runCli(["rm", "--engine", "kubernetes", "-w", ws.path], { env: env() });
  });

  it("--isolation bind is refused in one line", async () => {
    using ws = makeWorkspace();
    const run = await runCli(
      ["exec", "--engine", "kubernetes", "--isolation", "bind", "-w", ws.path, "--", "true"],
      {
        env: env(),
      },
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/cannot mount this machine's directory/);
  });

  it("doctor checks the cluster, the namespace, RBAC, Pod Security and the image", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["doctor", "--engine", "kubernetes", "-w", ws.path, "--output-format", "json"], {
      env: env(),
    });
    const report = JSON.parse(run.stdout) as { ok: boolean; checks: { name: string; status: string }[] };
    expect(report.ok, run.stdout).toBe(true);
    const status = new Map(report.checks.map((c) => [c.name, c.status]));
    expect(status.get("cluster")).toBe("ok");
    expect(status.get(`namespace ${TEST_NAMESPACE}`)).toBe("ok");
    expect(status.get("rbac")).toBe("ok");
    expect(status.get("image")).toBe("ok");
    expect(status.get(`pod security ${TEST_NAMESPACE}`)).toBe("ok");
  });

  it("ps lists pods, not containers", async () => {
    const run = await runCli(["ps", "--engine", "kubernetes"], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^(POD\s+STATUS|no harness pods in namespace)/);
  });
});
