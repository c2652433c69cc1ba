/**
 * docs/batch.md says which keys a task line may set and which it may not: both lists are checked
 * against the parser itself, so the page cannot again document keys the parser refuses.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseTasks } from "../../../src/batch/task-file.js";
import { ConfigError } from "../../../src/errors.js";

const page = readFileSync(fileURLToPath(new URL("../../../docs/batch.md", import.meta.url)), "utf8");
const flat = page.replace(/\s+/g, " ");

/** The backticked words of the text between `from` and `to`. */
function keysBetween(from: string, to: string): string[] {
  const start = flat.indexOf(from);
  const end = flat.indexOf(to, start);
  expect(start, `docs/batch.md has "${from}"`).toBeGreaterThanOrEqual(0);
  expect(end, `docs/batch.md has "${to}" after it`).toBeGreaterThan(start);
  return [...flat.slice(start + from.length, end).matchAll(/`([a-zA-Z]+)`/g)].map((m) => m[1] ?? "");
}

/** A value the key takes when it is allowed at all. */
const SAMPLE: Record<string, unknown> = {
  model: "claude-x",
  maxTurns: 3,
  maxTokens: 100,
  maxTotalTokens: 1000,
  maxBudgetUsd: 1,
  image: "img:1",
  memory: "1g",
  cpus: 1,
  timeout: 30,
  network: "none",
  isolation: "copy",
  secrets: ["NPM_TOKEN"],
  allowHost: "example.com",
  allow: "npm",
};

const line = (key: string, value: unknown) =>
  JSON.stringify({ id: "t", workspace: "w", task: "do it", [key]: value });

describe("docs/batch.md's per-task keys", () => {
  it("are each accepted by the tasks file's parser", () => {
    // `run` is the command the settings come from, not a key.
    const documented = keysBetween("plus any", "Relative workspaces").filter((key) => key !== "run");
    expect(documented.length).toBeGreaterThan(8);
    const refused = documented.flatMap((key) => {
      try {
        parseTasks(line(key, SAMPLE[key] ?? "x"), "/tmp");
        return [];
      } catch (error) {
        return [`${key}: ${(error as Error).message}`];
      }
    });
    expect(refused).toEqual([]);
  });

  it("and the ones it names as refused are refused, each in one line naming the batch flag", () => {
    const named = keysBetween("is refused in a tasks file", "instead.");
    expect(named).toEqual(expect.arrayContaining(["allowHost", "allow", "network"]));
    for (const key of ["allowHost", "allow"]) {
      expect(() => parseTasks(line(key, SAMPLE[key]), "/tmp")).toThrow(ConfigError);
    }
    expect(() => parseTasks(line("network", "bridge"), "/tmp")).toThrow(/pass --network to harness batch/);
  });
});
