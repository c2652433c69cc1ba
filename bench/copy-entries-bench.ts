/**
 * Copy mode with many entries: a task creates FILES empty files, then the host reads the copy back
 * and compares it (what `harness exec --isolation copy` does at the end). Prints the time the read
 * back took and the host's peak RSS during it (process.memoryUsage().rss every 10 ms), one run,
 * in a fresh process so an earlier case's heap does not count.
 *
 *   node --import tsx bench/copy-entries-bench.ts FILES [MAX_FILES]
 *
 * MAX_FILES is `--copy-max-files` (default: harness's own default).
 */
import { chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";

const files = Number(process.argv[2] ?? 200_000);
const maxFiles = process.argv[3] === undefined ? undefined : Number(process.argv[3]);
const workspace = mkdtempSync(join(tmpdir(), "harness-bench-copy-"));
writeFileSync(join(workspace, "README"), "a small workspace\n");
// harness never runs the sandbox as root: as root, give the workspace to a normal user.
if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
const mib = (bytes: number) => Math.round(bytes / 1024 ** 2);

const sandbox = await DockerSandbox.open({ workspace, isolation: "copy", copyMaxFiles: maxFiles });
try {
  const made = await sandbox.exec(`mkdir many && cd many && seq 1 ${files} | xargs touch && echo made`, {
    timeoutMs: 600_000,
  });
  if (made.stdout !== "made\n") throw new Error(`copy-entries-bench: creating files failed: ${made.stderr}`);
  const copy = sandbox.copy;
  if (!copy) throw new Error("copy-entries-bench: no copy");
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const started = performance.now();
  const outcome = await copy.exportChanges().then(
    (changes) => `${changes.counts.added} added, summary ${mib(changes.summary.length)} MiB`,
    (error: unknown) => `refused: ${(error as Error).message}`,
  );
  const elapsed = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  console.log(
    JSON.stringify({
      files,
      maxFiles: maxFiles ?? "default",
      seconds: Number((elapsed / 1000).toFixed(1)),
      rssBeforeMiB: mib(before),
      rssPeakMiB: mib(peak),
      outcome: outcome.slice(0, 160),
    }),
  );
} finally {
  await sandbox.stop();
  rmSync(workspace, { recursive: true, force: true });
}
