import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf, workspaceContainers } from "../support/workspace-container.js";

/**
 * `--devcontainer` through the built CLI: a devcontainer.json (JSONC) that builds from a Dockerfile
 * FROM harness's own image (no registry is reachable; the build has no network anyway), with a
 * user of uid 1001 (the workspace's owner), containerEnv, a postCreateCommand, and fields that would weaken the sandbox.
 */
describe.skipIf(skipDocker)("harness exec --devcontainer", { timeout: 300_000 }, () => {
  const fake = useFakeApi();

  it("builds the image, runs as remoteUser's uid with containerEnv, post-creates once per session (the container ends with it), never widens", async () => {
    using ws = makeWorkspace("harness-devc-");
    await using _container = removesContainerOf(ws.path);
    const image = await runCli(["image"]);
    expect(image.code).toBe(0);
    const base = image.stdout.trim().split("\n").pop() ?? "";
    // Where the host would show an initializeCommand had run: it must not.
    const hostProof = join(tmpdir(), `harness-devc-init-${process.pid}-${Date.now()}`);
    const dir = join(ws.path, ".devcontainer");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "Dockerfile"),
      [
        `FROM ${base}`,
        "USER root",
        "ARG NOTE=unset",
        "RUN echo 'dev:x:1001:1001::/home/sandbox:/bin/sh' >> /etc/passwd",
        'RUN echo "built $NOTE" > /opt/from-build && ls /sys/class/net > /opt/build-net',
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "devcontainer.json"),
      `{
        // JSONC: comments and trailing commas
        "name": "test",
        "build": { "dockerfile": "Dockerfile", "args": { "NOTE": "with-args", }, },
        "containerEnv": { "GREETING": "hello from devcontainer" },
        "remoteUser": "dev",
        "postCreateCommand": "echo \\"$(id -u) $GREETING\\" >> /workspace/post-create-marker",
        "privileged": true,
        "capAdd": ["SYS_ADMIN", "NET_ADMIN"],
        "initializeCommand": "touch ${hostProof}",
      }`,
    );
    // remoteUser must be the workspace owner's uid: the workspace is given to 1001, remoteUser's.
    chownSync(ws.path, 1001, 1001);

    const first = await runCli([
      "exec",
      "--workspace",
      ws.path,
      "--devcontainer",
      "--",
      'id -u; echo "$GREETING"; cat /opt/from-build /opt/build-net; grep CapEff /proc/self/status',
    ]);
    expect(first.stderr).toContain("harness: devcontainer.json: privileged ignored: ");
    expect(first.stderr).toContain("harness: devcontainer.json: capAdd ignored: ");
    expect(first.stderr).toMatch(/harness: devcontainer\.json: initializeCommand ignored: .*host/);
    expect(first.stderr).toMatch(/devcontainer postCreateCommand ran as 1001:1001: .*: done/);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(
      "1001\nhello from devcontainer\nbuilt with-args\nlo\nCapEff:\t0000000000000000\n",
    );
    expect(readFileSync(join(ws.path, "post-create-marker"), "utf8")).toBe("1001 hello from devcontainer\n");
    expect(existsSync(hostProof)).toBe(false);

    // The image is not harness's own: the session's end removed the container with everything of
    // the image, so the next session makes it again and post-creates again.
    expect(await workspaceContainers(ws.path)).toEqual([]);
    const second = await runCli(["exec", "--workspace", ws.path, "--devcontainer", "--", "id -u"]);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe("1001\n");
    expect(second.stderr).toMatch(/devcontainer postCreateCommand ran as 1001:1001: .*: done/);
    expect(readFileSync(join(ws.path, "post-create-marker"), "utf8")).toBe(
      "1001 hello from devcontainer\n1001 hello from devcontainer\n",
    );

    // From the host, while a session runs: the hardening as without a devcontainer.
    const running = spawnCli([
      "exec",
      "--workspace",
      ws.path,
      "--devcontainer",
      "--",
      "touch STARTED; sleep 600",
    ]);
    await expect.poll(() => existsSync(join(ws.path, "STARTED")), { timeout: 120_000 }).toBe(true);
    const [id] = await workspaceContainers(ws.path);
    const info = await new Docker().getContainer(id ?? "").inspect();
    running.child.kill("SIGTERM");
    await running.done;
    expect(await workspaceContainers(ws.path)).toEqual([]);
    expect(info.Config.Image).toMatch(/^harness-devcontainer:/);
    expect(info.Config.User).toBe("1001:1001");
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(info.HostConfig.NetworkMode).toBe("none");
    expect(info.Config.Env).not.toContain("GREETING=hello from devcontainer");
    await new Docker()
      .getImage(info.Config.Image)
      .remove()
      .catch(() => {});
  });

  it("takes an image by name and never runs as a root remoteUser", async () => {
    using ws = makeWorkspace("harness-devc-");
    await using _container = removesContainerOf(ws.path);
    const base = (await runCli(["image"])).stdout.trim().split("\n").pop() ?? "";
    writeFileSync(
      join(ws.path, ".devcontainer.json"),
      JSON.stringify({ image: base, remoteUser: "root", postCreateCommand: ["sh", "-c", "id -u > made-by"] }),
    );
    const run = await runCli(["exec", "--workspace", ws.path, "--devcontainer", "--", "id -u"]);
    expect(run.stderr).toMatch(
      /devcontainer\.json: remoteUser ignored: user 'root' \(0:0\) must not be uid 0/,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("1000\n");
    expect(readFileSync(join(ws.path, "made-by"), "utf8")).toBe("1000\n");
  });

  it("harness run records the postCreateCommand in the transcript, and its commands get containerEnv", async () => {
    using ws = makeWorkspace("harness-devc-");
    await using _container = removesContainerOf(ws.path);
    const base = (await runCli(["image"])).stdout.trim().split("\n").pop() ?? "";
    writeFileSync(
      join(ws.path, ".devcontainer.json"),
      JSON.stringify({
        image: base,
        containerEnv: { GREETING: "hi" },
        postCreateCommand: { first: "echo one", second: ["sh", "-c", "echo two >&2"] },
      }),
    );
    fake.api.enqueue(toolUseReply("bash", { command: 'echo "$GREETING"' }), textReply("Done."));
    const transcriptPath = join(tmpdir(), `harness-devc-${process.pid}-${Date.now()}.jsonl`);
    const run = await runCli(
      ["run", "--workspace", ws.path, "--devcontainer", "--transcript", transcriptPath, "greet"],
      { env: fake.env },
    );
    expect(run.code).toBe(0);
    const records = readFileSync(transcriptPath, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records[0]).toMatchObject({
      type: "run_start",
      postCreate: { user: "1000:1000", stdout: "one\n", stderr: "two\n", exitCode: 0, timedOut: false },
    });
    expect(records.find((r) => r["type"] === "tool_result")).toMatchObject({ stdout: "hi\n" });
    rmSync(transcriptPath, { force: true });
    // The run's checkpoints sit beside its transcript.
    rmSync(transcriptPath.replace(/\.jsonl$/, ".checkpoints"), { recursive: true, force: true });
  });

  it("harness run -w DIR --devcontainer TASK: the word after the bare flag is the task, not a file", async () => {
    using ws = makeWorkspace("harness-devc-");
    await using _container = removesContainerOf(ws.path);
    const base = (await runCli(["image"])).stdout.trim().split("\n").pop() ?? "";
    writeFileSync(join(ws.path, ".devcontainer.json"), JSON.stringify({ image: base }));
    fake.api.enqueue(toolUseReply("bash", { command: "echo from-the-task" }), textReply("Done."));
    const transcriptPath = join(tmpdir(), `harness-devc-order-${process.pid}-${Date.now()}.jsonl`);
    const run = await runCli(
      ["run", "-w", ws.path, "--transcript", transcriptPath, "--devcontainer", "say hello from the task"],
      { env: fake.env },
    );
    expect(run.stderr).not.toContain("ENOENT");
    expect(run.code).toBe(0);
    expect(JSON.stringify(fake.api.requests[0]?.body.messages)).toContain("say hello from the task");
    // A path still works, attached.
    const file = join(ws.path, ".devcontainer.json");
    const exec = await runCli(["exec", "-w", ws.path, `--devcontainer=${file}`, "echo", "ok"]);
    expect(exec.stderr).toBe("");
    expect(exec.stdout).toBe("ok\n");
    rmSync(transcriptPath, { force: true });
    rmSync(transcriptPath.replace(/\.jsonl$/, ".checkpoints"), { recursive: true, force: true });
  });

  it("runs a failed postCreateCommand again with the next command, and says the ignored fields once per container", async () => {
    using ws = makeWorkspace("harness-devc-");
    await using _container = removesContainerOf(ws.path);
    const base = (await runCli(["image"])).stdout.trim().split("\n").pop() ?? "";
    writeFileSync(
      join(ws.path, ".devcontainer.json"),
      JSON.stringify({
        image: base,
        forwardPorts: [3000],
        postCreateCommand: "test -e ready || { echo 'not ready yet'; exit 3; }; echo set-up >> setup-runs",
      }),
    );
    const exec = () => runCli(["exec", "--workspace", ws.path, "--devcontainer", "--", "true"]);
    const first = await exec();
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/devcontainer\.json: forwardPorts ignored: .*--publish/);
    expect(first.stderr).toMatch(
      /devcontainer postCreateCommand ran as 1000:1000: .*: failed \(exit 3\) \(it runs again with the next command here until it succeeds; a changed devcontainer\.json makes a new container\)\n/,
    );
    expect(first.stderr).toContain("  not ready yet");

    writeFileSync(join(ws.path, "ready"), "");
    const second = await exec();
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(
      /devcontainer postCreateCommand ran again \(it failed before\) as 1000:1000: .*: done\n/,
    );
    // The container is the same one: what devcontainer.json asked for and did not get was said already.
    expect(second.stderr).not.toContain("forwardPorts ignored");

    const third = await exec();
    expect(third.stderr).not.toContain("postCreateCommand");
    expect(third.stderr).not.toContain("forwardPorts ignored");
    expect(readFileSync(join(ws.path, "setup-runs"), "utf8")).toBe("set-up\n");
  });

  it("refuses, in one line naming the value and the fix, a remoteUser that is not the workspace owner", async () => {
    using ws = makeWorkspace("harness-devc-");
    const base = (await runCli(["image"])).stdout.trim().split("\n").pop() ?? "";
    writeFileSync(join(ws.path, ".devcontainer.json"), JSON.stringify({ image: base, remoteUser: "1001" }));
    const run = await runCli(["exec", "--workspace", ws.path, "--devcontainer", "--", "touch made"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^harness: devcontainer\.json: remoteUser uid 1001 is not the workspace's owner \(uid 1000 owns .*"Permission denied".*leave remoteUser out, name the image's user with uid 1000, or chown the workspace to 1001\n$/,
    );
    expect(existsSync(join(ws.path, "made"))).toBe(false);
    expect(await workspaceContainers(ws.path)).toEqual([]);
  });

  it("refuses a build whose Dockerfile leads out of the workspace through a symlink", async () => {
    using ws = makeWorkspace("harness-devc-");
    mkdirSync(join(ws.path, ".devcontainer"));
    symlinkSync("/etc/hostname", join(ws.path, ".devcontainer", "x"));
    writeFileSync(join(ws.path, ".devcontainer", "devcontainer.json"), '{"build": {"dockerfile": "x"}}');
    const run = await runCli(["exec", "--workspace", ws.path, "--devcontainer", "--", "true"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/build\.dockerfile '.*\/\.devcontainer\/x' is outside the workspace/);
    expect(await workspaceContainers(ws.path)).toEqual([]);
  });
});
