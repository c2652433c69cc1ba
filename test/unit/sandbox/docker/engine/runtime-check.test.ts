import { describe, expect, it } from "vitest";
import { runscDaemonJson, runtimeProblem } from "../../../../../src/sandbox/docker/engine/runtime-check.js";

const runc = { path: "runc" };

describe("runtimeProblem", () => {
  it("accepts a registered runtime, and runsc registered with --network=none", () => {
    expect(runtimeProblem("runc", "none", { runc })).toBeUndefined();
    const runsc = { path: "/usr/bin/runsc", runtimeArgs: ["--network=none"] };
    expect(runtimeProblem("runsc", "none", { runc, runsc })).toBeUndefined();
  });

  it("names the registered runtimes when the one asked for is missing", () => {
    expect(runtimeProblem("kata", "none", { runsc: {}, runc })).toMatch(
      /no runtime 'kata' \(registered: runc, runsc\)/,
    );
    expect(runtimeProblem("kata", "none", {})).toMatch(/registered: none/);
  });

  it("refuses runsc without --network=none for a network-less sandbox, with the entry to use", () => {
    const problem = runtimeProblem("gvisor", "none", { gvisor: { path: "/usr/bin/runsc" } });
    expect(problem).toContain("registered without --network=none");
    expect(problem).toContain(runscDaemonJson("gvisor", "/usr/bin/runsc"));
    expect(JSON.parse(runscDaemonJson("runsc"))).toEqual({
      runtimes: { runsc: { path: "/usr/bin/runsc", runtimeArgs: ["--network=none"] } },
    });
  });

  it("lets runsc without --network=none run a sandbox that has a network", () => {
    expect(runtimeProblem("runsc", "bridge", { runsc: { path: "/usr/bin/runsc" } })).toBeUndefined();
  });
});

describe("DockerSandbox.open with --runtime", () => {
  it("fails before creating anything when the engine registered runsc the plain way", async () => {
    const { DockerSandbox } = await import("../../../../../src/sandbox/docker/docker-sandbox.js");
    const { makeWorkspace } = await import("../../../../support/workspace.js");
    using ws = makeWorkspace();
    const calls: string[] = [];
    const docker = new Proxy(
      { info: async () => ({ Runtimes: { runc, runsc: { path: "/usr/bin/runsc" } } }) },
      {
        get(target, name) {
          calls.push(String(name));
          return Reflect.get(target, name);
        },
      },
    );
    const opening = DockerSandbox.open({ workspace: ws.path, runtime: "runsc", docker: docker as never });
    await expect(opening).rejects.toThrow(
      /--runtime runsc: .*without --network=none.*"runtimeArgs":\["--network=none"\]/,
    );
    expect(calls.filter((c) => c !== "then")).toEqual(["info"]);
  });
});
