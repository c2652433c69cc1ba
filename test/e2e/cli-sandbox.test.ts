import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

/** `harness exec`, `ps` and `rm` through the built CLI, as a user types them. */
describe.skipIf(skipDocker)("sandbox commands of the CLI", () => {
  it("exec runs one command in the sandbox and exits with its exit code", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["exec", "--workspace", ws.path, "--", "echo out; echo err >&2; id -u; exit 7"]);
    expect(run.code).toBe(7);
    expect(run.stdout).toBe("out\n1000\n");
    expect(run.stderr).toBe("err\n");
    await runCli(["rm", "--workspace", ws.path]);
  });

  it("takes the sandbox's limits from flags", async () => {
    using ws = makeWorkspace();
    const run = await runCli([
      "exec",
      "--workspace",
      ws.path,
      "--tmp-size",
      "16m",
      "--home-size",
      "8m",
      "--pids",
      "99",
      "--",
      "df -m /tmp $HOME | tail -n 2 | awk '{print $2}'; cat /sys/fs/cgroup/pids/pids.max",
    ]);
    expect(run.stdout).toBe("16\n8\n99\n");
    await runCli(["rm", "--workspace", ws.path]);
  });

  it("exec exits 124 with one line when the command times out", async () => {
    using ws = makeWorkspace();
    const run = await runCli([
      "exec",
      "--workspace",
      ws.path,
      "--timeout",
      "1",
      "--",
      "echo partial; sleep 30",
    ]);
    expect(run.code).toBe(124);
    expect(run.stdout).toBe("partial\n");
    expect(run.stderr).toBe("harness: Command timed out after 1000 milliseconds\n");
    await runCli(["rm", "--workspace", ws.path]);
  });

  it("ps lists the workspace's container and rm removes it", async () => {
    using ws = makeWorkspace();
    expect((await runCli(["exec", "--workspace", ws.path, "--", "true"])).code).toBe(0);
    const ps = await runCli(["ps"]);
    expect(ps.code).toBe(0);
    expect(ps.stdout).toContain(ws.path);
    const rm = await runCli(["rm", "--workspace", ws.path]);
    expect(rm.code).toBe(0);
    expect(rm.stdout).toMatch(/^removed [0-9a-f]{12} harness-/);
    expect((await runCli(["ps"])).stdout).not.toContain(ws.path);
  });

  it("says in one line that Docker is not reachable, and where", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["exec", "--workspace", ws.path, "--", "true"], {
      env: { DOCKER_HOST: "unix:///nonexistent/docker.sock" },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^harness: Docker is not reachable at unix:\/\/\/nonexistent\/docker\.sock .*\n$/,
    );
  });

  it("names a missing workspace in one line, exit 2", async () => {
    const run = await runCli(["exec", "--workspace", "/nonexistent/project", "--", "true"]);
    expect(run).toMatchObject({
      code: 2,
      stdout: "",
      stderr: "harness: workspace '/nonexistent/project' does not exist\n",
    });
  });
});

describe.skipIf(skipDocker)("harness shell", () => {
  it("opens an interactive shell in the workspace, as the workspace owner, and exits with its code", async () => {
    using ws = makeWorkspace();
    const { CLI_PATH } = await import("../support/run-cli.js");
    const { spawn } = await import("node:child_process");
    // script(1) gives the CLI a real terminal, as a person's would be.
    const child = spawn(
      "script",
      ["-qec", `${process.execPath} ${CLI_PATH} shell --workspace ${ws.path}`, "/dev/null"],
      {
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stdin.write("echo shell-says-$((6*7)); id -u; pwd\nexit 3\n");
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code).toBe(3);
    expect(out).toContain("shell-says-42");
    expect(out).toMatch(/\n1000\r*\n/);
    expect(out).toMatch(/\n\/workspace\r*\n/);
    await runCli(["rm", "--workspace", ws.path]);
  });
});
