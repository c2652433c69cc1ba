import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../../src/errors.js";
import { connectCluster } from "../../../../src/sandbox/kubernetes/api/kube-client.js";

function scratch(): { dir: string } & Disposable {
  const dir = mkdtempSync(join(tmpdir(), "harness-kube-"));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

describe("connectCluster's one-line errors", () => {
  it("no kubeconfig at all: says so and how to give one (not client-node's 'HTTP protocol is not allowed')", () => {
    using home = scratch();
    const connect = () => connectCluster({}, { HOME: home.dir });
    expect(connect).toThrow(ConfigError);
    expect(connect).toThrow(
      "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist: export KUBECONFIG=/path/to/kubeconfig (the file kubectl uses for the cluster)",
    );
  });

  it("a cluster at a plain http:// address: names it and the fix", () => {
    using home = scratch();
    const file = join(home.dir, "config");
    writeFileSync(
      file,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters: [{name: local, cluster: {server: 'http://127.0.0.1:8001'}}]",
        "users: [{name: me, user: {}}]",
        "contexts: [{name: proxy, context: {cluster: local, user: me}}]",
        "current-context: proxy",
      ].join("\n"),
    );
    expect(() => connectCluster({ kubeconfig: file }, { HOME: home.dir })).toThrow(
      "the kubeconfig's cluster 'local' (context proxy) is at http://127.0.0.1:8001, plain HTTP, which the Kubernetes client refuses: give the API server's https:// address",
    );
  });
});
