/**
 * TASKS.jsonl: one task a line, `{"id", "workspace", "task"}` plus any of `run`'s per-task settings
 * (the table's `perTask` ones, src/settings/; never one that widens the sandbox). Read whole and
 * checked before anything runs: a bad line is a usage error naming its line number, never a task
 * that fails later.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { CliFlags } from "../config.js";
import { ConfigError } from "../errors.js";
import { TASK_KEYS, wideningFlag } from "../settings/settings.js";

/** One task as the file gives it. */
export interface BatchTask {
  /** Unique in the file; the key of its result and the name of its transcript. */
  id: string;
  /** The workspace, resolved against the tasks file's directory. */
  workspace: string;
  /** What the agent should do. */
  task: string;
  /** The task's own settings, as `run` flags; they win over the batch's flags. */
  flags: CliFlags;
  /** 1-based line in the tasks file, for messages. */
  line: number;
}

/** Reads and checks the tasks file; throws ConfigError naming the first bad line. */
export function readTaskFile(path: string): BatchTask[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read the tasks file '${path}': ${(error as Error).message}`);
  }
  return parseTasks(text, dirname(resolve(path)), path);
}

/** Parses TASKS.jsonl text; relative workspaces are resolved against `baseDir`. */
export function parseTasks(text: string, baseDir: string, name = "tasks file"): BatchTask[] {
  const tasks: BatchTask[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === "") return;
    const where = `${name} line ${line}`;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new ConfigError(`${where}: not JSON: ${(error as Error).message}`);
    }
    const task = toTask(value, where, baseDir, line);
    if (seen.has(task.id)) throw new ConfigError(`${where}: id '${task.id}' is used twice`);
    seen.add(task.id);
    tasks.push(task);
  });
  if (tasks.length === 0) throw new ConfigError(`${name} has no tasks`);
  return tasks;
}

function toTask(value: unknown, where: string, baseDir: string, line: number): BatchTask {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ConfigError(`${where}: must be a JSON object with id, workspace and task`);
  const record = value as Record<string, unknown>;
  const text = (key: string): string => {
    const v = record[key];
    if (typeof v !== "string" || v.trim() === "")
      throw new ConfigError(`${where}: '${key}' must be a non-empty string`);
    return v;
  };
  const id = text("id");
  const workspace = resolve(baseDir, text("workspace"));
  const task = text("task");
  const flags: CliFlags = {};
  for (const [key, v] of Object.entries(record)) {
    if (key === "id" || key === "workspace" || key === "task") continue;
    if (key === "secrets") {
      flags.secretNames = secretNames(v, where);
      continue;
    }
    // A tasks file is often generated, or written by the tasks' own output: what would give a task's
    // sandbox more than the batch's flags do (a network, hosts to reach) comes from those flags only.
    const widening = wideningFlag("task", key, v);
    if (widening !== undefined) {
      throw new ConfigError(
        `${where}: '${key}' would widen the task's sandbox, which a tasks file cannot do: pass ${widening} to harness batch instead`,
      );
    }
    if (!(TASK_KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(
        `${where}: unknown setting '${key}' (known: id, workspace, task, ${TASK_KEYS.join(", ")})`,
      );
    }
    setFlag(flags, key, v, where);
  }
  return { id, workspace, task, flags, line };
}

/**
 * `secrets: ["NAME", …]`: which of the batch's `--secret` grants this task gets (by default, all).
 * Names only: where a value may go is the batch's flags' to say, never a tasks file's.
 */
function secretNames(value: unknown, where: string): string[] {
  if (
    !Array.isArray(value) ||
    !value.every((n) => typeof n === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
  ) {
    throw new ConfigError(
      `${where}: 'secrets' must be a list of variable names from harness batch's --secret flags (e.g. ["NPM_TOKEN"])`,
    );
  }
  return value as string[];
}

/** A task's key is the flag's own key in `CliFlags`; values are what that flag takes. */
function setFlag(flags: CliFlags, key: string, value: unknown, where: string): void {
  if (typeof value !== "string" && typeof value !== "number")
    throw new ConfigError(`${where}: '${key}' must be a string or a number`);
  (flags as Record<string, unknown>)[key] = String(value);
}
