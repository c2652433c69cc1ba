/**
 * Checkpoints of a workspace shaped like a Node project (issue 34): 200 tracked files in src/, and
 * 100,000 small files under node_modules/, which .gitignore lists. Two parts:
 *
 * 1. In process, through the RunCheckpointer `harness run` builds in bind mode (watched walks): the
 *    first snapshot, then 10 steps that each append one line to one file, per step time and bytes
 *    stored, with `--checkpoints all` (everything, as before) and by default (what git ignores left out).
 * 2. The built CLI against the fake Messages API and Docker (skipped with BENCH_CLI=0): a 10-step run
 *    whose every step appends one line, wall time and bytes written to the state directory, with
 *    `--no-checkpoints`, `--checkpoints all` and the default, one after another in the same minute.
 *
 *   node --import tsx bench/checkpoint-ignore-bench.ts
 *   (env: BENCH_IGNORED_FILES=100000 BENCH_STEPS=10 BENCH_CLI=1 BENCH_MODES=all,default: part 1's modes)
 */
import {
  appendFileSync,
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_SNAPSHOT_LIMITS } from "../src/checkpoints/checkpoint-types.js";
import { hostSnapshots } from "../src/checkpoints/host-snapshot.js";
import { RunCheckpointer } from "../src/checkpoints/run-checkpointer.js";
import { E2E_KEY, E2E_MODEL } from "../test/support/fake-api-fixture.js";
import { startFakeMessagesApi, textReply, toolUseReply } from "../test/support/fake-messages-api.js";
import { envInt, formatTable, ms, runProcess, summarize } from "./stats.js";
import { storedBytes } from "./stored-bytes.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CLI = join(ROOT, "bin", "harness.mjs");
const IGNORED = envInt("BENCH_IGNORED_FILES", 100_000);
const STEPS = envInt("BENCH_STEPS", 10);
const TRACKED = 200;
const PER_DIR = 100;
/** The uid the sandbox runs as when the bench runs as root (as test/support/workspace.ts). */
const SANDBOX_UID = 1000;

const base = mkdtempSync(join(tmpdir(), "harness-checkpoint-ignore-bench-"));

function makeProject(root: string): void {
  mkdirSync(join(root, "src"), { recursive: true });
  writeFileSync(join(root, ".gitignore"), "node_modules/\n");
  for (let i = 0; i < TRACKED; i++)
    writeFileSync(join(root, "src", `m${i}.js`), `export const m${i} = ${i};\n`);
  for (let i = 0; i < IGNORED; i++) {
    const dir = join(root, "node_modules", `p${Math.floor(i / PER_DIR)}`);
    if (i % PER_DIR === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}.js`), `module.exports = ${i};\n`);
  }
  writeFileSync(join(root, "log.txt"), "");
  if (process.getuid?.() === 0) {
    chownSync(root, SANDBOX_UID, SANDBOX_UID);
    chownSync(join(root, "log.txt"), SANDBOX_UID, SANDBOX_UID);
  }
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

async function inProcess(root: string): Promise<string> {
  const rows: string[][] = [];
  const modes = (process.env["BENCH_MODES"] ?? "all,default").split(",");
  for (const mode of modes.filter((m): m is "all" | "default" => m === "all" || m === "default")) {
    const state = join(base, `in-process-${mode}`);
    const host = hostSnapshots(root, undefined, undefined, mode === "all" ? undefined : {});
    const checkpointer = new RunCheckpointer({
      snapshot: host.snapshot,
      checkpointsDir: join(state, "runs", "r.checkpoints"),
      sharedBlobsDir: join(state, "blobs"),
      firstStep: 0,
      previous: new Map(),
      // Without the 60 s limit: on a loaded machine the first snapshot of everything takes longer,
      // and the run would go on without checkpoints, which measures nothing.
      limits: { ...DEFAULT_SNAPSHOT_LIMITS, maxMs: 600_000 },
      onCheckpoint: () => undefined,
      onNotice: (text) => process.stderr.write(`${text}\n`),
    });
    let started = performance.now();
    await checkpointer.start();
    const firstMs = performance.now() - started;
    const firstBytes = storedBytes([state], "disk");
    const steps: number[] = [];
    for (let i = 0; i < STEPS; i++) {
      appendFileSync(join(root, "log.txt"), `step ${i}\n`);
      started = performance.now();
      checkpointer.afterToolCall({ id: `toolu_${i}`, name: "bash", input: {} });
      await checkpointer.settle();
      steps.push(performance.now() - started);
    }
    await checkpointer.close();
    const s = summarize(steps);
    rows.push([
      mode === "all" ? "--checkpoints all (as before)" : "default (ignored left out)",
      ms(firstMs),
      mib(firstBytes),
      ms(s.medianMs),
      ms(s.p90Ms),
      ms(s.maxMs),
      kib((storedBytes([state], "disk") - firstBytes) / STEPS),
    ]);
  }
  return formatTable(["", "first snapshot", "stored", "step median", "p90", "max", "stored per step"], rows);
}

async function cli(root: string): Promise<string> {
  const rows: string[][] = [];
  for (const mode of ["--no-checkpoints", "--checkpoints all", "default"]) {
    const state = join(base, `cli-${mode.replace(/\W+/g, "")}`);
    await using api = await startFakeMessagesApi({ apiKey: E2E_KEY, models: [E2E_MODEL] });
    for (let i = 0; i < STEPS; i++)
      api.enqueue(toolUseReply("bash", { command: `echo step ${i} >> log.txt` }));
    api.enqueue(textReply("Done."));
    const flags = mode === "default" ? [] : mode.split(" ");
    const started = performance.now();
    const run = await runProcess(
      process.execPath,
      [CLI, "run", "--workspace", root, "--network", "none", ...flags, "append ten lines"],
      {
        cwd: ROOT,
        env: {
          PATH: process.env["PATH"] ?? "",
          HOME: process.env["HOME"] ?? "/root",
          NO_COLOR: "1",
          XDG_STATE_HOME: state,
          ANTHROPIC_API_KEY: E2E_KEY,
          MODEL_ID: E2E_MODEL,
          ANTHROPIC_BASE_URL: api.url,
        },
      },
    );
    const wall = performance.now() - started;
    if (run.code !== 0)
      throw new Error(`harness run ${mode} exited ${run.code}: ${run.stderr.trim().slice(-400)}`);
    rows.push([mode, `${(wall / 1000).toFixed(1)} s`, mib(storedBytes([state], "disk"))]);
  }
  await runProcess(process.execPath, [CLI, "rm", "--workspace", root], { cwd: ROOT });
  return formatTable([`${STEPS} steps`, "wall time", "state written"], rows);
}

try {
  const root = join(base, "workspace");
  makeProject(root);
  process.stdout.write(
    `checkpoints of ${TRACKED} tracked files and ${IGNORED} under an ignored node_modules/, ${STEPS} steps that each append one line\n\n`,
  );
  process.stdout.write(
    `in process (RunCheckpointer, bind mode's watched walk)\n${await inProcess(root)}\n\n`,
  );
  if (process.env["BENCH_CLI"] !== "0")
    process.stdout.write(`harness run (built CLI, fake Messages API, Docker)\n${await cli(root)}\n`);
} finally {
  rmSync(base, { recursive: true, force: true });
}
