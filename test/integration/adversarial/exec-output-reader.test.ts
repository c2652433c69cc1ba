import { type ChildProcessByStdio, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../../support/docker-available.js";
import { CLI_PATH } from "../../support/run-cli.js";
import { makeWorkspace } from "../../support/workspace.js";
import { removesContainerOf, workspaceProcesses } from "../../support/workspace-container.js";

/**
 * `harness exec` (the built CLI) whose output goes to a reader that is slow or goes away. A flood
 * must not pile up in harness's memory, and when the output has nowhere to go the command is killed
 * inside the container and harness exits 141, as a shell reports a pipeline member killed by SIGPIPE.
 */
type Cli = ChildProcessByStdio<null, Readable, Readable>;

function startExec(workspace: string, timeoutSeconds: number, command: string): Cli {
  const child = spawn(
    process.execPath,
    [CLI_PATH, "exec", "--workspace", workspace, "--timeout", String(timeoutSeconds), "--", command],
    {
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: process.env["HOME"] ?? "/root",
        XDG_STATE_HOME: join(tmpdir(), "harness-test-state"),
        ...(process.env["DOCKER_HOST"] ? { DOCKER_HOST: process.env["DOCKER_HOST"] } : {}),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  // Whatever happens, no CLI outlives its test.
  const guard = setTimeout(() => child.kill("SIGKILL"), 100_000);
  child.once("close", () => clearTimeout(guard));
  return child;
}

function exited(child: Cli): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
}

/** Collects a stream's text as it arrives. */
function collect(stream: Readable): () => string {
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  return () => text;
}

/**
 * Highest VmRSS of the CLI seen until it exits, sampled from the host's /proc. Past `giveUpAt` it is
 * killed: the bound is broken already, and the old code would take minutes to flush its backlog.
 */
async function peakRssBytes(child: Cli, giveUpAt: number): Promise<number> {
  let peak = 0;
  const until = exited(child);
  const sample = () => {
    try {
      const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1];
      peak = Math.max(peak, Number(kib ?? 0) * 1024);
    } catch {
      // Exited between samples.
    }
    if (peak > giveUpAt) child.kill("SIGKILL");
  };
  const sampler = setInterval(sample, 50);
  await until;
  clearInterval(sampler);
  return peak;
}

/** Reads 4 KiB every 100 ms: a reader a thousand times slower than the flood. */
function readSlowly(stream: Readable): () => void {
  stream.pause();
  const reader = setInterval(() => {
    stream.read(Math.min(4096, stream.readableLength));
  }, 100);
  return () => {
    clearInterval(reader);
    stream.resume();
  };
}

const MiB = 1024 ** 2;

describe.skipIf(skipDocker)("adversarial: harness exec into a slow or vanishing reader", () => {
  it.each([
    ["stdout", "yes"],
    ["stderr", "yes >&2"],
    ["stdout and stderr", "yes & yes >&2"],
  ] as const)(
    "keeps host memory bounded when %s is read slowly, and still times out",
    async (which, command) => {
      using ws = makeWorkspace();
      await using _container = removesContainerOf(ws.path);
      const child = startExec(ws.path, 8, command);
      const slow =
        which === "stdout"
          ? [child.stdout]
          : which === "stderr"
            ? [child.stderr]
            : [child.stdout, child.stderr];
      const stops = slow.map(readSlowly);
      const stderr = which === "stdout" ? collect(child.stderr) : () => "";
      const code = exited(child);
      const peak = await peakRssBytes(child, 1024 * MiB);
      for (const stop of stops) stop();
      // The old code grew past 600 MB within 4 s of a stdout flood and kept growing.
      expect(peak).toBeLessThan(200 * MiB);
      expect(await code).toBe(124);
      if (which === "stdout")
        expect(stderr()).toContain("harness: Command timed out after 8000 milliseconds");
      expect((await workspaceProcesses(ws.path)).join("\n")).not.toMatch(/\byes\b/);
    },
  );

  it.each([
    ["stdout", "yes"],
    ["stderr", "yes >&2"],
  ] as const)("kills the command and exits 141 when the reader of %s goes away", async (which, command) => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    // A timeout far away: the exit must come from the closed pipe, not from the timeout (124).
    const child = startExec(ws.path, 60, command);
    const [gone, other] = which === "stdout" ? [child.stdout, child.stderr] : [child.stderr, child.stdout];
    const otherText = collect(other);
    await new Promise<void>((resolve) => gone.once("data", () => resolve()));
    // The reader takes a few bytes and leaves, as `| head -1` does.
    gone.destroy();
    expect(await exited(child)).toBe(141);
    // No stack trace, no EPIPE: nothing at all on the stream still open.
    expect(otherText()).toBe("");
    expect((await workspaceProcesses(ws.path)).join("\n")).not.toMatch(/\byes\b/);
  });
});
