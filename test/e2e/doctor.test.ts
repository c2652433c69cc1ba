import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

const STATUS_LINE = /^(ok {3}|warn |fail )[^:]+: .+$/;

describe("harness doctor", () => {
  it.skipIf(skipDocker)(
    "says harness can run against the real engine: exit 0, every line has a status",
    async () => {
      using ws = makeWorkspace();
      const run = await runCli(["doctor", "-w", ws.path], { timeoutMs: 60_000 });
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      const lines = run.stdout.trimEnd().split("\n");
      for (const line of lines) expect(line).toMatch(STATUS_LINE);
      expect(lines.some((l) => l.startsWith("ok   engine: "))).toBe(true);
      expect(lines.some((l) => l.startsWith("ok   workspace: "))).toBe(true);
      const json = await runCli(["doctor", "-w", ws.path, "--output-format", "json"], { timeoutMs: 60_000 });
      const parsed = JSON.parse(json.stdout) as {
        ok: boolean;
        checks: Array<{ name: string; status: string }>;
      };
      expect(parsed.ok).toBe(true);
      expect(parsed.checks.map((c) => c.name)).toEqual(lines.map((l) => l.slice(5).split(":")[0]));
    },
  );

  it("with DOCKER_HOST at a dead socket: exit 1, one line says the engine is unreachable, no stack trace", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["doctor", "-w", ws.path], {
      env: { DOCKER_HOST: `unix://${ws.path}/no-engine.sock` },
      timeoutMs: 30_000,
    });
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split("\n");
    for (const line of lines) expect(line).toMatch(STATUS_LINE);
    expect(lines.filter((l) => /^fail engine: .*not reachable/.test(l))).toHaveLength(1);
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/\n\s+at /);
  });
});
