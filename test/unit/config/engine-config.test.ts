import { describe, expect, it } from "vitest";
import { loadSandboxConfig } from "../../../src/config.js";

describe("--engine, --kube-context, --namespace", () => {
  it("docker by default, with bind isolation and no Kubernetes settings", () => {
    const config = loadSandboxConfig({}, {});
    expect(config).toMatchObject({ engine: "docker", isolation: "bind" });
    expect(config.namespace).toBeUndefined();
  });

  it("kubernetes from the flag or HARNESS_ENGINE; the flag wins; copy isolation unless told", () => {
    expect(loadSandboxConfig({ HARNESS_ENGINE: "kubernetes" }, {})).toMatchObject({
      engine: "kubernetes",
      isolation: "copy",
      isolationExplicit: false,
    });
    expect(loadSandboxConfig({ HARNESS_ENGINE: "kubernetes" }, { engine: "docker" }).engine).toBe("docker");
    // Named, bind is kept so that the engine refuses it in one line rather than switching silently.
    expect(loadSandboxConfig({}, { engine: "kubernetes", isolation: "bind" })).toMatchObject({
      isolation: "bind",
      isolationExplicit: true,
    });
  });

  it("the namespace from the flag or HARNESS_NAMESPACE, the context from the flag", () => {
    expect(
      loadSandboxConfig({ HARNESS_NAMESPACE: "agents" }, { engine: "kubernetes", kubeContext: "prod" }),
    ).toMatchObject({ namespace: "agents", kubeContext: "prod" });
    expect(
      loadSandboxConfig({ HARNESS_NAMESPACE: "agents" }, { engine: "kubernetes", namespace: "ci" }).namespace,
    ).toBe("ci");
  });

  it("--kube-seccomp-profile from the flag only", () => {
    expect(
      loadSandboxConfig({}, { engine: "kubernetes", kubeSeccompProfile: "harness/sandbox.json" })
        .seccompProfile,
    ).toBe("harness/sandbox.json");
    expect(
      loadSandboxConfig({ HARNESS_KUBE_SECCOMP_PROFILE: "x" }, { engine: "kubernetes" }).seccompProfile,
    ).toBeUndefined();
  });

  it("refuses an engine it does not know", () => {
    expect(() => loadSandboxConfig({ HARNESS_ENGINE: "nomad" }, {})).toThrow(
      /--engine must be docker or kubernetes/,
    );
  });
});
