import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { REFUSED_FIELDS } from "../../../src/devcontainer/devcontainer-fields.js";
import { loadDevcontainer } from "../../../src/devcontainer/load-devcontainer.js";
import { postCreateCommandLine } from "../../../src/devcontainer/post-create-command.js";
import { ConfigError } from "../../../src/errors.js";

let root: string;
let ws: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "harness-devc-"));
  ws = join(root, "ws");
  mkdirSync(join(ws, ".devcontainer"), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function write(json: string, name = ".devcontainer/devcontainer.json"): void {
  writeFileSync(join(ws, name), json);
}

describe("loadDevcontainer", () => {
  it("takes a build, env, user and postCreateCommand from JSONC", () => {
    writeFileSync(join(ws, ".devcontainer", "Dockerfile"), "FROM x\n");
    write(`{
      // comments and trailing commas are JSONC
      "build": { "dockerfile": "Dockerfile", "args": { "A": "1" }, },
      "containerEnv": { "GREETING": "hi" },
      "remoteEnv": { "OTHER": "x" },
      "remoteUser": "dev",
      "postCreateCommand": "echo made > marker",
    }`);
    const dev = loadDevcontainer(ws, undefined);
    expect(dev.build?.dockerfile).toMatch(/\.devcontainer\/Dockerfile$/);
    expect(dev.build?.context).toMatch(/\.devcontainer$/);
    expect(dev.build?.args).toEqual({ A: "1" });
    expect(dev.env).toEqual(["GREETING=hi", "OTHER=x"]);
    expect(dev.user).toBe("dev");
    expect(dev.postCreateCommand).toBe("echo made > marker");
    expect(dev.ignored).toEqual([]);
  });

  it("finds .devcontainer.json at the root and takes an image", () => {
    rmSync(join(ws, ".devcontainer"), { recursive: true });
    write('{"image": "harness-sandbox:abc", "containerUser": "1001"}', ".devcontainer.json");
    const dev = loadDevcontainer(ws, undefined);
    expect(dev.image).toBe("harness-sandbox:abc");
    expect(dev.user).toBe("1001");
  });

  it("says, one line each, why every weakening field is ignored", () => {
    const fields = {
      privileged: true,
      capAdd: ["SYS_ADMIN"],
      securityOpt: ["seccomp=unconfined"],
      runArgs: ["--privileged"],
      mounts: ["source=/,target=/host,type=bind"],
      workspaceMount: "source=/,target=/workspace,type=bind",
      init: true,
      forwardPorts: [8000],
      appPort: 3000,
      features: { "ghcr.io/devcontainers/features/docker-in-docker:2": {} },
      initializeCommand: "touch /tmp/pwned",
      onCreateCommand: "x",
      updateContentCommand: "x",
      postStartCommand: "x",
      postAttachCommand: "x",
    };
    write(JSON.stringify({ image: "i", ...fields, build: undefined }));
    const dev = loadDevcontainer(ws, undefined);
    for (const field of Object.keys(fields)) {
      const lines = dev.ignored.filter((line) => line.startsWith(`devcontainer.json: ${field} ignored: `));
      expect(lines, field).toHaveLength(1);
      expect(REFUSED_FIELDS[field]).toBeDefined();
    }
    expect(dev.ignored.find((l) => l.includes("initializeCommand"))).toMatch(/on the host/);
    expect(dev.ignored.find((l) => l.includes("forwardPorts"))).toMatch(/--publish/);
  });

  it("says nothing of fields that ask for nothing", () => {
    write('{"image": "i", "privileged": false, "capAdd": [], "mounts": [], "runArgs": []}');
    expect(loadDevcontainer(ws, undefined).ignored).toEqual([]);
  });

  it("leaves out build.options and env values with variables (localEnv never reaches the sandbox)", () => {
    writeFileSync(join(ws, ".devcontainer", "Dockerfile"), "FROM x\n");
    const hostVariable = ["$", "{localEnv:HOME}"].join("");
    write(
      JSON.stringify({
        build: { dockerfile: "Dockerfile", options: ["--network=host"] },
        containerEnv: { KEY: hostVariable, OK: "1" },
      }),
    );
    const dev = loadDevcontainer(ws, undefined);
    expect(dev.env).toEqual(["OK=1"]);
    expect(dev.ignored).toEqual([
      expect.stringMatching(/^devcontainer\.json: build\.options ignored: /),
      expect.stringMatching(/^devcontainer\.json: containerEnv\.KEY ignored: .*host's environment/),
    ]);
  });

  it("refuses build paths with .., absolute, or through a symlink out of the workspace", () => {
    mkdirSync(join(root, "outside"));
    writeFileSync(join(root, "outside", "Dockerfile"), "FROM x\n");
    for (const dockerfile of ["../../outside/Dockerfile", "/etc/passwd", `${root}/outside/Dockerfile`]) {
      write(JSON.stringify({ build: { dockerfile } }));
      expect(() => loadDevcontainer(ws, undefined), dockerfile).toThrow(ConfigError);
    }
    writeFileSync(join(ws, ".devcontainer", "Dockerfile"), "FROM x\n");
    write(JSON.stringify({ build: { dockerfile: "Dockerfile", context: "../.." } }));
    expect(() => loadDevcontainer(ws, undefined)).toThrow(/outside the workspace/);
    // `..` that stays inside the workspace: the usual build from the project's root.
    write(JSON.stringify({ build: { dockerfile: "Dockerfile", context: ".." } }));
    expect(loadDevcontainer(ws, undefined).build?.context).toBe(realpathSync(ws));
    symlinkSync(join(root, "outside"), join(ws, ".devcontainer", "out"));
    write(JSON.stringify({ build: { dockerfile: "Dockerfile", context: "out" } }));
    expect(() => loadDevcontainer(ws, undefined)).toThrow(/outside the workspace/);
    symlinkSync(join(root, "outside", "Dockerfile"), join(ws, ".devcontainer", "Linked"));
    write(JSON.stringify({ build: { dockerfile: "Linked" } }));
    expect(() => loadDevcontainer(ws, undefined)).toThrow(/outside the workspace/);
  });

  it("refuses a devcontainer.json outside the workspace or a symlink to one", () => {
    writeFileSync(join(root, "devcontainer.json"), '{"image": "i"}');
    expect(() => loadDevcontainer(ws, join(root, "devcontainer.json"))).toThrow(/outside the workspace/);
    symlinkSync(join(root, "devcontainer.json"), join(ws, ".devcontainer", "devcontainer.json"));
    expect(() => loadDevcontainer(ws, undefined)).toThrow(/no \.devcontainer/);
  });

  it("refuses a file without image or build, a compose setup, and bad shapes", () => {
    const cases = [
      "{}",
      '{"dockerComposeFile": "compose.yml", "service": "app"}',
      '{"image": 3}',
      '{"image": "i", "containerEnv": {"A": 1}}',
      '{"image": "i", "containerEnv": {"A=B": "x"}}',
      '{"image": "i", "postCreateCommand": 5}',
      '{"image": "i", "remoteUser": ""}',
      "[1]",
      "{not json}",
    ];
    for (const text of cases) {
      write(text);
      expect(() => loadDevcontainer(ws, undefined), text).toThrow(ConfigError);
    }
  });

  it("says when there is no devcontainer.json", () => {
    rmSync(join(ws, ".devcontainer"), { recursive: true });
    expect(() => loadDevcontainer(ws, undefined)).toThrow(/no \.devcontainer\/devcontainer\.json/);
  });
});

describe("postCreateCommandLine", () => {
  it("takes a string, an argv and an object of either", () => {
    expect(postCreateCommandLine("make && make test")).toEqual({ ok: true, command: "make && make test" });
    expect(postCreateCommandLine(["echo", "a b", "it's"])).toEqual({
      ok: true,
      command: "echo 'a b' 'it'\\''s'",
    });
    expect(postCreateCommandLine({ one: "echo 1", two: ["echo", "2"] })).toEqual({
      ok: true,
      command: "(echo 1\n) && (echo 2\n)",
    });
    expect(postCreateCommandLine(undefined)).toEqual({ ok: true, command: undefined });
    expect(postCreateCommandLine([1]).ok).toBe(false);
    expect(postCreateCommandLine({ a: 3 }).ok).toBe(false);
  });
});
