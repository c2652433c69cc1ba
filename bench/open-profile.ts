/**
 * What `DockerSandbox.open` spends from nothing (no container) to the first result, in process,
 * phase by phase (issue 35): every engine request is stamped when it is sent and answered, an
 * upgraded one (the executor's exec) also at its first reads and writes, and the gaps between them are
 * harness's own work. Each round opens a fresh container (removed again by `stop`, `removeOnStop`),
 * and the table gives the median offset of each stamp from the start of `open` and the median time
 * since the stamp before.
 *   node --import tsx bench/open-profile.ts   (env: BENCH_ROUNDS=10)
 */

import { chownSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import http from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { envInt, formatTable, summarize } from "./stats.js";

const ROUNDS = envInt("BENCH_ROUNDS", 10);

let stamps: Array<[string, number]> = [];
let t0 = 0;
const stamp = (what: string) => stamps.push([what, performance.now() - t0]);

const request = http.request;
http.request = function (this: unknown, ...args: Parameters<typeof http.request>) {
  const options = (
    typeof args[0] === "object" && !(args[0] instanceof URL) ? args[0] : {}
  ) as http.RequestOptions;
  const path = String(options.path ?? "")
    .replace(/[0-9a-f]{64}/g, "ID")
    .replace(/\?.*/, "");
  const what = `${options.method ?? "GET"} ${path}`;
  stamp(`> ${what}`);
  const req = request.apply(this, args);
  req.on("response", () => stamp(`< ${what}`));
  req.on("upgrade", (_res, socket) => {
    stamp(`< ${what} (upgraded)`);
    let reads = 0;
    socket.on("data", () => {
      reads += 1;
      if (reads <= 2) stamp(`  exec stream: read ${reads}`);
    });
    const write = socket.write;
    let writes = 0;
    socket.write = function (this: typeof socket, ...w: Parameters<typeof socket.write>) {
      writes += 1;
      if (writes <= 3) stamp(`  exec stream: write ${writes}`);
      return write.apply(this, w);
    } as typeof socket.write;
  });
  return req;
} as typeof http.request;

const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-open-profile-")));
if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
const rounds: Array<Array<[string, number]>> = [];
try {
  // A first open builds or finds the image and warms the module caches: not counted.
  await (await DockerSandbox.open({ workspace, removeOnStop: true })).stop();
  for (let r = 0; r < ROUNDS; r++) {
    stamps = [];
    t0 = performance.now();
    stamp("open called");
    const sandbox = await DockerSandbox.open({ workspace, removeOnStop: true });
    stamp("open returned");
    await sandbox.exec("echo first");
    stamp("first result");
    rounds.push([...stamps]);
    await sandbox.stop();
  }
} finally {
  rmSync(workspace, { recursive: true, force: true });
}

// Stamps by name and occurrence (a request made twice is two rows), ordered by median offset.
const byKey = new Map<string, number[]>();
for (const r of rounds) {
  const seen = new Map<string, number>();
  for (const [what, t] of r) {
    const n = (seen.get(what) ?? 0) + 1;
    seen.set(what, n);
    const key = n === 1 ? what : `${what} #${n}`;
    byKey.set(key, [...(byKey.get(key) ?? []), t]);
  }
}
const rows = [...byKey.entries()]
  .filter(([, ts]) => ts.length >= rounds.length / 2)
  .map(([key, ts]) => [key, summarize(ts).medianMs] as const)
  .sort((a, b) => a[1] - b[1]);
console.log(
  `open from nothing, in process: ${ROUNDS} rounds, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}; median ms since open was called, and since the stamp before\n`,
);
console.log(
  formatTable(
    ["stamp", "at", "since previous"],
    rows.map(([key, at], i) => [key, at.toFixed(1), (at - (rows[i - 1]?.[1] ?? 0)).toFixed(1)]),
  ),
);
