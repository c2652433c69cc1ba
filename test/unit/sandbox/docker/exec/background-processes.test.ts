import { describe, expect, it, vi } from "vitest";
import {
  backgroundJobs,
  listBackgroundProcesses,
  type TopResult,
} from "../../../../../src/sandbox/docker/exec/background-processes.js";
import { runDockerExec } from "../../../../../src/sandbox/docker/per-call/docker-exec.js";
import { INIT_CHILD } from "../../../../../src/sandbox/exec/exec-scripts.js";
import { execRequest, FakeContainer } from "./fake-docker.js";

const TITLES = ["PID", "PPID", "RUID", "STAT", "ELAPSED", "COMMAND"];
const INIT = "6337";

/** `docker top` of a sandbox, host pids as the engine reports them; `extra` rows added to it. */
function top(...extra: string[][]): TopResult {
  return {
    Titles: TITLES,
    Processes: [
      [INIT, "6318", "0", "Ss", "900", "/bin/sh -c # shellcheck shell=sh … harness-init 2147483647"],
      ["6384", INIT, "0", "S", "900", INIT_CHILD],
      ...extra,
    ],
  };
}

/** A FakeContainer that also answers inspect and top, counting the top calls. */
function withTop(fake: FakeContainer, answer: () => Promise<TopResult>) {
  const calls: unknown[] = [];
  Object.assign(fake, {
    inspect: async () => ({ State: { Pid: Number(INIT) } }),
    top: (options: unknown) => {
      calls.push(options);
      return answer();
    },
  });
  return calls;
}

describe("backgroundJobs", () => {
  it("lists what PID 1 adopted, oldest first, and not PID 1, its sleep, zombies or children of a job", () => {
    const jobs = backgroundJobs(
      INIT,
      top(
        ["7001", INIT, "1000", "S", "12", "python3 -m http.server 8000"],
        ["7002", "7001", "1000", "S", "12", "python3 worker.py"],
        ["7100", INIT, "1000", "Ss", "400", "sleep 999"],
        ["7200", INIT, "1000", "Z", "3", "[sh] <defunct>"],
      ),
    );
    expect(jobs).toEqual([
      { command: "sleep 999", ageSeconds: 400 },
      { command: "python3 -m http.server 8000", ageSeconds: 12 },
    ]);
  });

  it("does not list the first process of an exec, nor what runs under a command still going", () => {
    const jobs = backgroundJobs(
      INIT,
      top(
        // Parents outside the container: a command's wrapper, the allowlist relay, a kill helper.
        [
          "8000",
          "6318",
          "1000",
          "Ss",
          "1",
          "/bin/sh -c … harness-exec 0123456789abcdef /workspace make /workspace",
        ],
        ["8100", "6318", "1000", "Ss", "60", "python3 -I -S -c import errno, os, selectors …"],
        ["8200", "6318", "1000", "Ss", "0", "/bin/sh -c … harness-kill 0123 2 8000 9000"],
        // A command that printed a fake end marker and carries on: its processes hang off its wrapper.
        ["8001", "8000", "1000", "S", "1", 'bash -c trap … eval "$1" bash sleep 5'],
        ["8002", "8001", "1000", "S", "1", "sleep 5"],
      ),
    );
    expect(jobs).toEqual([]);
  });

  it("lists a job that names itself like PID 1's sleep: it is not of PID 1's uid", () => {
    expect(backgroundJobs(INIT, top(["9100", INIT, "1000", "S", "7", INIT_CHILD]))).toEqual([
      { command: INIT_CHILD, ageSeconds: 7 },
    ]);
  });

  it("collapses whitespace and cuts a long command line", () => {
    const long = `node  server.js\t--flag ${"a".repeat(400)}`;
    const [job] = backgroundJobs(INIT, top(["9000", INIT, "1000", "S", "5", long]));
    expect(job?.command.startsWith("node server.js --flag aaa")).toBe(true);
    expect(job?.command).toHaveLength(200);
    expect(job?.command.endsWith("…")).toBe(true);
  });

  it("lists nothing when top's columns are not the ones asked for", () => {
    expect(backgroundJobs(INIT, { Titles: ["PID", "COMMAND"], Processes: [["7001", "x"]] })).toEqual([]);
    expect(backgroundJobs(INIT, {})).toEqual([]);
  });
});

describe("listBackgroundProcesses", () => {
  it("asks top for pid, parent, state, elapsed seconds and the command line", async () => {
    const fake = new FakeContainer();
    const calls = withTop(fake, async () => top(["7001", INIT, "1000", "S", "3", "sleep 60"]));
    expect(await listBackgroundProcesses(fake.container)).toEqual([{ command: "sleep 60", ageSeconds: 3 }]);
    expect(calls).toEqual([{ ps_args: "-o pid,ppid,ruid,stat,etimes,args" }]);
  });

  it("gives up after its deadline, and on an engine error, with an empty list", async () => {
    const hanging = new FakeContainer();
    withTop(hanging, () => new Promise<TopResult>(() => {}));
    const started = performance.now();
    expect(await listBackgroundProcesses(hanging.container, 50)).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1000);
    const failing = new FakeContainer();
    withTop(failing, async () => {
      throw new Error("(HTTP code 500) server error - ps: unknown option");
    });
    expect(await listBackgroundProcesses(failing.container)).toEqual([]);
  });
});

describe("runDockerExec and the background count", () => {
  it("does not ask the engine when the wrapper counted nothing (the common call)", async () => {
    const fake = new FakeContainer((run) => run.stream.write(run.markerFrames(0, "/work")));
    const calls = withTop(fake, async () => top());
    const outcome = await runDockerExec(fake.container, execRequest());
    expect(calls).toEqual([]);
    expect(outcome).toMatchObject({ backgroundCount: 0, background: [], endCwd: "/work" });
  });

  it("asks once when the wrapper counted some, and lists only what top shows", async () => {
    const fake = new FakeContainer((run) => {
      run.stream.write(run.stderrMarker());
      run.stream.write(run.stdoutMarker(0, "/work/a:b", 0, 3));
    });
    const calls = withTop(fake, async () =>
      top(["7001", INIT, "1000", "S", "75", "python3 -m http.server 8000"]),
    );
    const outcome = await runDockerExec(fake.container, execRequest());
    expect(calls).toHaveLength(1);
    expect(outcome).toMatchObject({
      backgroundCount: 3,
      background: [{ command: "python3 -m http.server 8000", ageSeconds: 75 }],
      endCwd: "/work/a:b",
    });
  });

  it("lists nothing for a faked count when top shows nothing adopted by PID 1", async () => {
    const fake = new FakeContainer((run) => {
      run.stream.write(run.stderrMarker());
      run.stream.write(run.stdoutMarker(0, "/work", 0, 999_999));
    });
    withTop(fake, async () => top());
    const outcome = await runDockerExec(fake.container, execRequest());
    expect(outcome.background).toEqual([]);
  });

  it("keeps a top that never answers from holding the call past its deadline", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const fake = new FakeContainer((run) => {
        run.stream.write(run.stderrMarker());
        run.stream.write(run.stdoutMarker(0, "/work", 0, 1));
      });
      withTop(fake, () => new Promise<TopResult>(() => {}));
      const pending = runDockerExec(fake.container, execRequest());
      await vi.advanceTimersByTimeAsync(5_000);
      const outcome = await pending;
      expect(outcome).toMatchObject({ exitCode: 0, backgroundCount: 1, background: [] });
    } finally {
      vi.useRealTimers();
    }
  });
});
