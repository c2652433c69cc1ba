import { describe, expect, it } from "vitest";
import { runDockerExec } from "../../../../../src/sandbox/docker/per-call/docker-exec.js";
import { MARKER_LEAD, START_LEAD } from "../../../../../src/sandbox/docker/per-call/wrapper-script.js";
import type { ExecRequest, StreamName } from "../../../../../src/sandbox/exec/exec-types.js";
import { randomChunks, seededRandom } from "../../exec/random-chunks.js";
import { execRequest, FakeContainer, type FakeRun, frame } from "../exec/fake-docker.js";

function request(overrides: Partial<ExecRequest> = {}): ExecRequest {
  return execRequest({ command: "make test", killGraceSeconds: 2, ...overrides });
}

describe("runDockerExec", () => {
  it("creates the exec with the wrapper, a fresh nonce, the start dir, the tag env var and no TTY", async () => {
    const fake = new FakeContainer((run) => run.stream.write(run.markerFrames(0, "/work")));
    await runDockerExec(fake.container, request({ command: "ls -la" }));
    await runDockerExec(fake.container, request({ startDir: "/tmp/a dir" }));
    const [first, second] = fake.created;
    const nonce = first?.Cmd?.[4] ?? "";
    expect(nonce).toMatch(/^[0-9a-f]{16}$/);
    expect(second?.Cmd?.[4]).not.toBe(nonce);
    expect(first?.Cmd?.slice(0, 2)).toEqual(["/bin/sh", "-c"]);
    expect(first?.Cmd?.slice(3)).toEqual([
      "harness-exec",
      nonce,
      "/work",
      "ls -la",
      "/work",
      START_LEAD,
      MARKER_LEAD,
    ]);
    expect(second?.Cmd?.[7]).toBe("/tmp/a dir");
    expect(first).toMatchObject({
      Env: [`HARNESS_EXEC=${nonce}`],
      User: "1000:1000",
      WorkingDir: "/work",
      AttachStdin: false,
      Tty: false,
    });
  });

  it("finishes on the markers while a background process holds the stream open", async () => {
    let run: FakeRun | undefined;
    const fake = new FakeContainer((r) => {
      run = r;
      r.stdout("built\n");
      r.stderr("warning: unused\n");
      r.stream.write(r.markerFrames(2, "/work/sub:dir", 1));
      // The server the command started keeps writing; its output is not the command's.
      r.stdout("server listening\n");
      r.stderr("server log\n");
    });
    const outcome = await runDockerExec(fake.container, request());
    expect(outcome).toMatchObject({
      exitCode: 2,
      oomKills: 1,
      endCwd: "/work/sub:dir",
      wrapperLost: false,
      timedOut: false,
      canceled: false,
      killFailed: false,
    });
    expect(outcome.stdout.toString()).toBe("built\n");
    expect(outcome.stderr.toString()).toBe("warning: unused\n");
    expect(fake.killCmds).toEqual([]);
    // The stream is let go of, not left waiting for the background process.
    expect(run?.stream.destroyed).toBe(true);
  });

  it("waits for the stderr marker, so stderr arriving after the stdout marker is kept", async () => {
    // Docker copies stdout and stderr separately: their order in the stream need not be the order written.
    const fake = new FakeContainer((run) => {
      run.stream.write(run.stdoutMarker(1, "/work"));
      setTimeout(() => {
        run.stderr("error: late\n");
        run.stream.write(run.stderrMarker());
      }, 20);
    });
    const outcome = await runDockerExec(fake.container, request());
    expect(outcome.stderr.toString()).toBe("error: late\n");
    expect(outcome).toMatchObject({ exitCode: 1, wrapperLost: false });
  });

  it("takes the exit code from ExecInspect when the stream ends without markers", async () => {
    const fake = new FakeContainer((run) => {
      run.stdout("half a line");
      run.stderr("Killed\n");
      run.finish(137);
      run.stream.end();
    });
    const outcome = await runDockerExec(fake.container, request());
    expect(outcome).toMatchObject({ exitCode: 137, wrapperLost: true, endCwd: undefined, oomKills: 0 });
    expect(outcome.stdout.toString()).toBe("half a line");
    expect(outcome.stderr.toString()).toBe("Killed\n");
  });

  it("emits a held-back marker-looking tail as output when the stream ends", async () => {
    const fake = new FakeContainer((run) => {
      run.stdout(`out${MARKER_LEAD}${run.nonce.slice(0, 5)}`);
      run.finish(1);
      run.stream.end();
    });
    const outcome = await runDockerExec(fake.container, request());
    expect(outcome.stdout.toString()).toBe(`out${MARKER_LEAD}${fake.created[0]?.Cmd?.[4]?.slice(0, 5)}`);
    expect(outcome.exitCode).toBe(1);
  });

  const lastLine = "the-final-line-that-must-not-be-truncated\n";
  it.each<[string, (run: FakeRun) => void]>([
    [
      "frames and end in the same tick",
      (run) =>
        process.nextTick(() => {
          run.stdout("first\n");
          run.stdout(lastLine);
          run.stream.end();
        }),
    ],
    [
      "the last frame split, its rest passed to end()",
      (run) =>
        process.nextTick(() => {
          const last = frame(1, lastLine);
          run.stdout("first\n");
          run.stream.write(last.subarray(0, 12));
          run.stream.end(last.subarray(12));
        }),
    ],
    [
      "everything on a later macrotask",
      (run) =>
        setImmediate(() => {
          run.stream.end(Buffer.concat([frame(1, "first\n"), frame(1, lastLine)]));
        }),
    ],
  ])("does not lose output that arrives as the raw stream ends (%s)", async (_name, deliver) => {
    const fake = new FakeContainer((run) => {
      run.finish(0);
      deliver(run);
    });
    const outcome = await runDockerExec(fake.container, request());
    expect(outcome.stdout.toString()).toBe(`first\n${lastLine}`);
    expect(outcome.exitCode).toBe(0);
  });

  it("does not lose the markers when they arrive as the raw stream ends", async () => {
    const fake = new FakeContainer((run) =>
      process.nextTick(() => {
        run.stdout("done\n");
        run.stream.end(run.markerFrames(0, "/work"));
      }),
    );
    const outcome = await runDockerExec(fake.container, request());
    expect(outcome).toMatchObject({ exitCode: 0, endCwd: "/work", wrapperLost: false });
    expect(outcome.stdout.toString()).toBe("done\n");
  });

  it("finishes when ExecInspect says the exec stopped though the stream stays open", async () => {
    const fake = new FakeContainer((run) => {
      run.stdout("orphaned output\n");
      run.finish(3);
    });
    const outcome = await runDockerExec(fake.container, request());
    expect(outcome).toMatchObject({ exitCode: 3, wrapperLost: true, timedOut: false });
    expect(outcome.stdout.toString()).toBe("orphaned output\n");
  });

  it("gives onOutput every byte, including those cut from the buffers, and never the markers", async () => {
    const random = seededRandom(3);
    const data = {
      stdout: Buffer.from(
        Array.from({ length: 5000 }, (_, i) => String.fromCharCode(33 + (i % 90))).join(""),
      ),
      stderr: Buffer.from("é€😀 ".repeat(300)),
    };
    const fake = new FakeContainer((run) => {
      for (const chunk of randomChunks(data.stdout, random, 700)) run.stdout(chunk);
      for (const chunk of randomChunks(data.stderr, random, 333)) run.stderr(chunk);
      run.stream.write(run.markerFrames(0, "/work"));
    });
    const seen: Record<StreamName, Buffer[]> = { stdout: [], stderr: [] };
    const outcome = await runDockerExec(
      fake.container,
      request({
        headBytes: 16,
        tailBytes: 16,
        onOutput: (name, chunk) => {
          seen[name].push(Buffer.from(chunk));
        },
      }),
    );
    expect(Buffer.concat(seen.stdout).equals(data.stdout)).toBe(true);
    expect(Buffer.concat(seen.stderr).equals(data.stderr)).toBe(true);
    expect(outcome.stdout.isTruncated).toBe(true);
    expect(outcome.stdout.totalBytes).toBe(data.stdout.length);
    expect(outcome.stderr.totalBytes).toBe(data.stderr.length);
  });
});
