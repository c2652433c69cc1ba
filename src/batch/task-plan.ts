/**
 * Each task's settings: the batch's flags and env, then the task's own settings over them, checked
 * by the same `loadAgentConfig`/`loadSandboxConfig` as `run`. A workspace named by two or more tasks
 * is given copy isolation for each of them, so no two tasks ever write one directory at once.
 */
import { realpathSync } from "node:fs";
import {
  type AgentConfig,
  type CliFlags,
  loadAgentConfig,
  loadSandboxConfig,
  type SandboxConfig,
} from "../config.js";
import { ConfigError } from "../errors.js";
import type { BatchTask } from "./task-file.js";

/** A task with its settings decided. */
export interface PlannedTask {
  /** The task as the file gave it. */
  task: BatchTask;
  /** Model, limits, prices. */
  agentConfig: AgentConfig;
  /** The sandbox's settings; `isolation` is "copy" when the workspace is shared. */
  sandboxConfig: SandboxConfig;
  /** True when another task names the same workspace (so this one runs on a copy). */
  sharedWorkspace: boolean;
}

/** Plans every task; throws ConfigError naming the task's line for the first bad setting. */
export function planTasks(
  tasks: readonly BatchTask[],
  batchFlags: CliFlags,
  env: NodeJS.ProcessEnv,
): PlannedTask[] {
  const byWorkspace = new Map<string, BatchTask[]>();
  for (const task of tasks) {
    const key = realPath(task.workspace);
    byWorkspace.set(key, [...(byWorkspace.get(key) ?? []), task]);
  }
  return tasks.map((task) => {
    const sharers = byWorkspace.get(realPath(task.workspace)) ?? [];
    const sharedWorkspace = sharers.length > 1;
    const flags: CliFlags = { ...batchFlags, ...task.flags, workspace: task.workspace };
    if (sharedWorkspace && flags.isolation === "bind") {
      const others = sharers.filter((t) => t !== task).map((t) => `'${t.id}'`);
      throw new ConfigError(
        `task '${task.id}' (line ${task.line}): isolation 'bind' on a workspace that task ${others.join(", ")} also uses: two writers at once; leave isolation out (shared workspaces get copy isolation) or give each task its own workspace`,
      );
    }
    if (sharedWorkspace) flags.isolation = "copy";
    try {
      return {
        task,
        agentConfig: loadAgentConfig(env, flags),
        sandboxConfig: loadSandboxConfig(env, flags),
        sharedWorkspace,
      };
    } catch (error) {
      if (error instanceof ConfigError)
        throw new ConfigError(`task '${task.id}' (line ${task.line}): ${error.message}`, { cause: error });
      throw error;
    }
  });
}

/** The real path when the directory exists (two spellings of one directory are one workspace). */
function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
