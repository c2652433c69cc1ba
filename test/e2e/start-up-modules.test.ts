import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

const TRACE = fileURLToPath(new URL("../support/module-trace.mjs", import.meta.url));

/**
 * The source files in the bundle's modules the built CLI loaded while running `args`: esbuild names
 * each bundled file in a comment (`// node_modules/@kubernetes/client-node/dist/config.js`).
 */
async function modulesLoadedBy(args: (workspace: string) => string[]): Promise<string[]> {
  using ws = makeWorkspace();
  const trace = join(ws.path, "..", `${ws.path.split("/").at(-1)}.modules`);
  const run = await runCli(args(ws.path), {
    env: { NODE_OPTIONS: `--import ${TRACE}`, HARNESS_MODULE_TRACE: trace },
    timeoutMs: 120_000,
  });
  expect(run.code, run.stderr).toBe(0);
  const loaded = readFileSync(trace, "utf8").trim().split("\n");
  expect(loaded.some((url) => url.includes("/dist/"))).toBe(true);
  return loaded
    .filter((url) => url.startsWith("file:") && url.includes("/dist/"))
    .flatMap((url) => [...readFileSync(fileURLToPath(url), "utf8").matchAll(/^\/\/ (node_modules\/\S+)$/gm)])
    .map((match) => match[1] ?? "");
}

/**
 * Start-up speed: the Kubernetes client takes about 0.3 s to load, more than a warm Docker exec
 * costs in all; a Docker command must never load it.
 */
describe.skipIf(skipDocker)("what a Docker command loads", () => {
  it.each([
    ["exec", (ws: string) => ["exec", "-w", ws, "--", "true"]],
    ["doctor", (ws: string) => ["doctor", "-w", ws]],
  ])("%s leaves @kubernetes/client-node unloaded", async (_name, args) => {
    const bundled = await modulesLoadedBy(args);
    expect(bundled.some((file) => file.includes("node_modules/dockerode/"))).toBe(true);
    expect(bundled.filter((file) => file.includes("@kubernetes/client-node"))).toEqual([]);
  });
});
