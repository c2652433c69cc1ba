/**
 * SshDialAgent against a fake `ssh` first in PATH (a Node script): it answers HTTP on its stdio the
 * way `docker system dial-stdio` does, or fails the way ssh fails. No sshd, no engine, no network.
 * Every case asserts how the request ended, never how long it took.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SshConnectionError } from "../../../../../src/sandbox/docker/engine/ssh-connection.js";
import { SshDialAgent } from "../../../../../src/sandbox/docker/engine/ssh-dial-agent.js";

/** FAKE_SSH_MODE picks what the fake does; every start is counted in FAKE_SSH_LOG. */
const FAKE_SSH = `#!${process.execPath}
const { appendFileSync } = require("node:fs");
const { spawn } = require("node:child_process");
const mode = process.env.FAKE_SSH_MODE;
appendFileSync(process.env.FAKE_SSH_LOG, process.argv.slice(2).join(" ") + "\\n");
const fail = (line) => { process.stderr.write(line + "\\n"); process.exit(255); };
if (mode === "refused") fail("me@host: Permission denied (publickey).");
if (mode === "unanswered") fail("Connection timed out during banner exchange");
let request = "";
process.stdin.on("data", (chunk) => {
  request += chunk;
  if (!request.includes("\\r\\n\\r\\n")) return;
  request = "";
  if (mode === "answer") {
    process.stdout.write("HTTP/1.1 200 OK\\r\\nContent-Type: text/plain\\r\\nContent-Length: 2\\r\\n\\r\\nOK");
    return;
  }
  // Mid-response: headers and part of a chunked body, then ssh dies.
  process.stdout.write("HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n3\\r\\nabc\\r\\n", () => {
    if (mode === "killed") process.kill(process.pid, "SIGKILL");
    // As a ControlMaster would: something outlives ssh and holds its stdout open.
    const holder = spawn("sleep", ["60"], { stdio: ["ignore", "inherit", "ignore"], detached: true });
    appendFileSync(process.env.FAKE_SSH_LOG, "holder " + holder.pid + "\\n");
    fail("Connection to host closed by remote host.");
  });
});
process.stdin.on("end", () => process.exit(0));
`;

let dir: string;
let log: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-fake-ssh-"));
  log = join(dir, "starts.log");
  writeFileSync(join(dir, "ssh"), FAKE_SSH, { mode: 0o755 });
});
afterEach(() => {
  for (const line of existsSync(log) ? readFileSync(log, "utf8").split("\n") : []) {
    const holder = /^holder (\d+)$/.exec(line)?.[1];
    if (holder === undefined) continue;
    try {
      process.kill(Number(holder), "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

function agent(mode: string, host = "ssh://me@host:2222"): SshDialAgent {
  return new SshDialAgent(host, { PATH: `${dir}:/usr/bin:/bin`, FAKE_SSH_MODE: mode, FAKE_SSH_LOG: log });
}

function starts(): string[] {
  return existsSync(log)
    ? readFileSync(log, "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("holder"))
    : [];
}

/** GET / through `via`; resolves with the body, or with the error that ended the request or response. */
function get(via: SshDialAgent): Promise<{ body: string } | { error: Error }> {
  return new Promise((resolve) => {
    const req = request({ host: "docker", path: "/_ping", agent: via }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () => resolve({ body }));
      res.on("error", (error) => resolve({ error }));
      res.on("aborted", () => resolve({ error: new Error("aborted") }));
    });
    req.on("error", (error) => resolve({ error }));
    req.end();
  });
}

describe("SshDialAgent", () => {
  it("runs `ssh … -- host docker system dial-stdio` and speaks HTTP over it, reusing the connection", async () => {
    const via = agent("answer");
    expect(await get(via)).toEqual({ body: "OK" });
    expect(await get(via)).toEqual({ body: "OK" });
    expect(starts()).toEqual([expect.stringMatching(/-l me -p 2222 -- host docker system dial-stdio$/)]);
    via.destroy();
  });

  it("works as dockerode's agent", async () => {
    const docker = new Docker({
      host: "docker",
      port: 80,
      protocol: "http",
      agent: agent("answer"),
    } as Docker.DockerOptions);
    expect(String(await docker.ping())).toBe("OK");
  });

  it("a refused login is ssh's own last line, typed", async () => {
    const result = await get(agent("refused"));
    expect(result).toMatchObject({ error: expect.any(SshConnectionError) });
    expect((result as { error: Error }).error.message).toBe(
      "ssh to ssh://me@host:2222 ended (exit 255): me@host: Permission denied (publickey).",
    );
  });

  it("ssh killed mid-response ends the response with an error, not a hang", async () => {
    const result = await get(agent("killed"));
    expect(result).toMatchObject({ error: expect.any(Error) });
  });

  it("ssh gone while something else holds its stdout still ends the connection", async () => {
    const result = await get(agent("holder"));
    expect(result).toMatchObject({ error: expect.any(Error) });
  });

  it("after a host did not answer, new connections fail at once with that error instead of starting ssh again", async () => {
    const via = agent("unanswered");
    const first = await get(via);
    expect((first as { error: Error }).error.message).toBe(
      "ssh to ssh://me@host:2222 ended (exit 255): Connection timed out during banner exchange",
    );
    const second = await get(via);
    expect((second as { error: Error }).error.message).toMatch(
      /timed out during banner exchange \(not tried again for \d+ s\)$/,
    );
    expect(starts()).toHaveLength(1);
  });

  it("a refused connection is not held: the next request starts ssh again", async () => {
    const via = agent("refused");
    await get(via);
    await get(via);
    expect(starts()).toHaveLength(2);
  });

  it("says so when there is no ssh to run", async () => {
    const via = new SshDialAgent("ssh://host", { PATH: join(dir, "empty") });
    const result = await get(via);
    expect((result as { error: Error }).error.message).toBe(
      "ssh to ssh://host could not start: no 'ssh' command on PATH",
    );
  });
});
