/**
 * What a person at a terminal meets with `harness exec` and `harness shell` beyond the command's own
 * result: piped input the command never gets, a published port with nothing behind it or a server
 * whose exec timed out, a test runner's colours, and a shell started without a terminal. Each is one
 * line that names the value and the fix, checked through the built CLI.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { freePort } from "../support/publish-client.js";
import { CLI_PATH, runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf } from "../support/workspace-container.js";

const ESC = "\u001b";

/** Connects to host:port and says how the connection ended: "reset", "closed" or "refused". */
function connectionEnd(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => socket.write("GET / HTTP/1.0\r\n\r\n"));
    socket.on("data", () => {});
    socket.on("error", (error: NodeJS.ErrnoException) =>
      resolve(
        error.code === "ECONNRESET"
          ? "reset"
          : error.code === "ECONNREFUSED"
            ? "refused"
            : String(error.code),
      ),
    );
    socket.on("end", () => resolve("closed"));
  });
}

/** The built CLI on a real terminal (script(1)); stdout and stderr both arrive on it. */
function onTerminal(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string }> {
  const command = [process.execPath, CLI_PATH, ...args]
    .map((a) => `'${a.replaceAll("'", "'\\''")}'`)
    .join(" ");
  const child = spawn("script", ["-qec", command, "/dev/null"], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/root", TERM: "xterm", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, out })));
}

describe("harness shell without a terminal", () => {
  it("is refused in one line that says what to use instead", async () => {
    const run = await runCli(["shell", "--workspace", "/nonexistent/ws"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "harness: the shell needs a terminal, and stdin is not one: run commands with harness exec -- 'CMD' instead (or start the shell from a terminal; over ssh, ssh -t)\n",
    );
  });
});

describe("--engine kubernetes without a kubeconfig", () => {
  it("is one line saying so and how to give one, not client-node's 'HTTP protocol is not allowed'", async () => {
    using ws = makeWorkspace();
    const home = mkdtempSync(join(tmpdir(), "harness-home-"));
    try {
      const run = await runCli(["exec", "--engine", "kubernetes", "-w", ws.path, "--", "true"], {
        env: { HOME: home },
        unset: ["KUBECONFIG"],
      });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        "harness: no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist: export KUBECONFIG=/path/to/kubeconfig (the file kubectl uses for the cluster)\n",
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("usage errors", () => {
  it("are one line naming the option and where the options are listed, not the whole help", async () => {
    const run = await runCli(["exec", "--workspce", "x", "--", "true"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "harness: unknown option '--workspce' (Did you mean --workspace?) (see harness exec --help)\n",
    );
  });
});

describe.skipIf(skipDocker)("harness exec at a terminal", { timeout: 180_000 }, () => {
  it("says in one line that piped stdin was not passed to the command", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const piped = await runCli(["exec", "--workspace", ws.path, "--", "cat; echo done"], {
      input: "data for cat\n",
    });
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe("done\n");
    expect(piped.stderr).toBe(
      "harness: stdin was not passed to the command (harness exec gives it none): put the input in a workspace file and redirect inside, e.g. harness exec -- 'cmd < input.txt'\n",
    );
    const empty = await runCli(["exec", "--workspace", ws.path, "--", "true"]);
    expect(empty.stderr).toBe("");
  });

  it("a published port with nothing behind it resets the client and says so once; a timed-out server says why the port closed", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const hostPort = await freePort();
    const cli = spawnCli([
      "exec",
      "--workspace",
      ws.path,
      "--publish",
      `8000:${hostPort}`,
      "--timeout",
      "8",
      "--",
      "echo started; sleep 600",
    ]);
    await cli.waitForStdout(/started/);
    expect(await connectionEnd(hostPort)).toBe("reset");
    expect(await connectionEnd(hostPort)).toBe("reset");
    const run = await cli.done;
    expect(run.code).toBe(124);
    const refused = run.stderr.split("\n").filter((line) => line.includes("could not be forwarded"));
    expect(refused).toEqual([
      `harness: published port 8000 (127.0.0.1:${hostPort}): a connection could not be forwarded: 127.0.0.1:8000: Connection refused: start the server on the sandbox's 127.0.0.1:8000 and keep it running (harness exec: give it --timeout SECONDS as long as it should serve; run and mcp: start it in the background with &)`,
    ]);
    expect(run.stderr).toContain(
      "harness: the published ports closed with it: a server run by harness exec needs --timeout SECONDS as long as it should serve (it had 8)",
    );
  });

  it("a missing image is one line that names it and says how to get it, also from devcontainer.json", async () => {
    using ws = makeWorkspace();
    const image = `harness-test-missing-${process.pid}:1`;
    const run = await runCli(["exec", "--workspace", ws.path, "--image", image, "--", "true"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `harness: image '${image}' is not on the engine, and harness never pulls: get it with \`docker pull ${image}\` (or build it), or pass another --image\n`,
    );
    writeFileSync(join(ws.path, ".devcontainer.json"), JSON.stringify({ image, remoteUser: "node" }));
    const dev = await runCli(["exec", "--workspace", ws.path, "--devcontainer", "--", "true"]);
    expect(dev.code).toBe(1);
    expect(dev.stderr).toBe(
      `harness: devcontainer.json's image '${image}' is not on the engine, and harness never pulls: get it with \`docker pull ${image}\` (or build it), or give devcontainer.json a 'build'\n`,
    );
  });

  it("passes a test runner's colours to the terminal, escapes every other sequence, and resets a colour left open", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const { code, out } = await onTerminal([
      "exec",
      "--workspace",
      ws.path,
      "--",
      "printf '\\033[1;31mFAIL\\033[0m a.test\\n\\033]0;title\\007\\033[2J\\302\\23331m\\033[32mleft open\\n'",
    ]);
    expect(code).toBe(0);
    expect(out).toContain(`${ESC}[1;31mFAIL${ESC}[0m a.test`);
    expect(out).toContain("\\x1b]0;title\\x07\\x1b[2J\\x9b31m");
    expect(out).toContain(`${ESC}[32mleft open`);
    expect(out).toMatch(new RegExp(`left open\\r?\\n${ESC}\\[0m`.replaceAll(ESC, "\\u001b")));
    // NO_COLOR: the colours are dropped, not shown as text.
    const plain = await onTerminal(
      ["exec", "--workspace", ws.path, "--", "printf '\\033[31mred\\033[0m\\n'"],
      {
        NO_COLOR: "1",
      },
    );
    expect(plain.out).toContain("red");
    expect(plain.out).not.toContain(ESC);
    expect(plain.out).not.toContain("\\x1b");
  });
});
