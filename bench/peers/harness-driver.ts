/**
 * harness's side of the line protocol peer_driver.py speaks for the peers (its docstring has the
 * requests and replies): `DockerSandbox.open` from nothing then `echo first`, one `exec` per call,
 * `stop`, each timed in this process around the call only, as the peers' are in theirs. Every
 * container harness creates is recorded by id as the engine returns it (dockerode's createContainer,
 * wrapped here), so that the bench removes it between rounds and nothing else.
 *   node --import tsx bench/peers/harness-driver.ts   (env: BENCH_RECORD_DIR, BENCH_WORKSPACE)
 */
import { createInterface } from "node:readline";
import Docker from "dockerode";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import type { ExecResult } from "../../src/sandbox/sandbox.js";
import { formatExecResult } from "../../src/tools/format-exec-result.js";
import { recordCreated } from "./created-record.js";
import type { DriverReply, Output } from "./driver-protocol.js";

const recordDir = process.env["BENCH_RECORD_DIR"] ?? "";
const workspace = process.env["BENCH_WORKSPACE"] ?? "";

const createContainer = Docker.prototype.createContainer;
Docker.prototype.createContainer = async function (this: Docker, options: Docker.ContainerCreateOptions) {
  const container = await createContainer.call(this, options);
  recordCreated(recordDir, "container", container.id);
  return container;
} as typeof createContainer;

/** The result string as the caller gets it, as its UTF-8 bytes (what the bench compares). */
function output(text: string, digest: boolean): Output {
  const data = Buffer.from(text, "utf8");
  return digest
    ? { kind: "str", len: data.length, allZero: /^\0*$/.test(text) }
    : { kind: "str", len: data.length, b64: data.toString("base64") };
}

function resultReply(r: ExecResult, digest: boolean): Partial<DriverReply> {
  return {
    stdout: output(r.stdout, digest),
    stderr: output(r.stderr, digest),
    merged: false,
    exit: r.exitCode ?? null,
    error: r.shortMessage === "" ? null : r.shortMessage,
    timedOut: r.timedOut,
    // What harness states about what it did not return: output cut, and the bytes written in all.
    truncated: r.isTruncated,
    counted: r.stdoutBytes,
    // What the model's tool result says of bytes it does not show as themselves (issue 35).
    stated: /<note>(Not byte-exact: [^<]*)<\/note>/.exec(formatExecResult(r))?.[1] ?? null,
  };
}

let sandbox: DockerSandbox | undefined;
let stuck = false;
const send = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);

/** Runs `job`, timed; undefined when it has not settled by the deadline (it is left running). */
async function timed<T>(
  job: () => Promise<T>,
  deadlineS: number,
): Promise<{ ms: number; value?: T; error?: string } | undefined> {
  const started = performance.now();
  const settled = job().then(
    (value) => ({ ms: performance.now() - started, value }),
    (error: unknown) => ({ ms: performance.now() - started, error: String(error).slice(0, 500) }),
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), deadlineS * 1000);
  });
  const done = await Promise.race([settled, late]);
  clearTimeout(timer);
  return done;
}

interface Request {
  op: "open" | "run" | "close";
  deadline: number;
  command?: string;
  timeout?: number;
  digest?: boolean;
}

async function handle(request: Request): Promise<boolean> {
  if (stuck) {
    send({ returned: false, waited: 0, stuck: true });
    return true;
  }
  const digest = request.digest === true;
  const done =
    request.op === "open"
      ? await timed(async () => {
          sandbox = await DockerSandbox.open({ workspace });
          return sandbox.exec("echo first", { timeoutMs: 60_000 });
        }, request.deadline)
      : request.op === "run"
        ? await timed(
            async () =>
              (sandbox as DockerSandbox).exec(request.command ?? "", {
                timeoutMs: (request.timeout ?? 0) * 1000,
              }),
            request.deadline,
          )
        : await timed(async () => (sandbox as DockerSandbox).stop(), request.deadline);
  if (done === undefined) {
    stuck = true;
    send({ returned: false, waited: request.deadline });
    return true;
  }
  const reply: Partial<DriverReply> = {
    returned: true,
    ms: Math.round(done.ms * 1000) / 1000,
    error: done.error ?? null,
  };
  if (request.op !== "close" && done.value !== undefined)
    Object.assign(reply, resultReply(done.value as ExecResult, digest));
  send(reply);
  return request.op !== "close";
}

send({
  ready: {
    system: "harness",
    settings: { network: "none (its default)", call: "executor frames over one exec's attach stream" },
  },
});
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!(await handle(JSON.parse(line) as Request))) break;
}
// A call left running past its deadline must not keep this process alive.
process.exit(0);
