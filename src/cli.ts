/**
 * The command line. The only place that loads `.env`, sets `process.exitCode`, and wires the parts
 * together. Heavy modules load inside each command, so `harness exec` never pays for the model SDK.
 */
import { Command, Option } from "commander";
import { describeDefaultConcurrency } from "./batch/default-concurrency.js";
import { loadDotenvFile } from "./cli/dotenv/dotenv-load.js";
import { batchExitCodes, EXIT, exitCodeForEnd } from "./cli/exit-codes.js";
import { reportError } from "./cli/report-error.js";
import { Interrupts } from "./cli/session/interrupts.js";
import { watchProcessEnds } from "./cli/session/process-ends.js";
import { SessionEnd } from "./cli/session/session-end.js";
import { oneLineUsageErrors } from "./cli/usage-errors.js";
import type { CliFlags } from "./config.js";
import { RUNS_HELP } from "./runs/retention-defaults.js";
import { addSettings, attachOptionalValues } from "./settings/commander-options.js";
import { SETTINGS, type SettingKey } from "./settings/settings.js";
import { sanitizeDebugLogs } from "./terminal/debug-log.js";
import { sanitizeForTerminal } from "./terminal/sanitize.js";
import { HARNESS_VERSION } from "./version.js";

/** `harness doctor --help`: kept here so --help does not load the doctor's modules. */
const DOCTOR_HELP_TEXT = `
Each line is ok, warn (harness runs, with a limit worth knowing) or fail (harness cannot run here),
and says what to do. Exit status: 0 when harness can run, 1 when a check failed.`;

type Flags = CliFlags & Record<string, unknown>;

/** How a command that takes one run names it (src/runs/run-catalog.ts findRun, run-to-continue.ts namedRun). */
const RUN_REF_HELP =
  "a run: its id, a unique prefix or suffix of it (the pid), last or last~N (harness runs lists them), or a transcript path";

/** What every command with a sandbox takes, in help's order. */
const SANDBOX_KEYS = [
  "workspace",
  "image",
  "network",
  "user",
  "runtime",
  "context",
  "memory",
  "tmpSize",
  "homeSize",
  "cpus",
  "pids",
  "protect",
  "allowHost",
  "allow",
  "allowPrivate",
  "secret",
  "allowRequest",
  "secretInBody",
  "egressLimit",
  "egressWildcardNames",
  "timeout",
  "isolation",
  "copyLimit",
  "copyMaxFiles",
  "packageCache",
  "packageCacheMax",
  "apply",
] as const satisfies readonly SettingKey[];

/** `run`'s agent settings; `batch` takes the same, per task. */
const AGENT_KEYS = [
  "model",
  "maxTurns",
  "maxTokens",
  "maxTotalTokens",
  "contextWindow",
  "contextManagement",
  "thinking",
  "effort",
  "tools",
] as const satisfies readonly SettingKey[];
const BLOCKLIST_KEYS = ["blocklist", "block"] as const satisfies readonly SettingKey[];

/** `--engine` and the Kubernetes engine's own options: every command with a sandbox, and doctor, ps, rm. */
const ENGINE_KEYS = [
  "engine",
  "kubeContext",
  "namespace",
  "kubeSeccompProfile",
] as const satisfies readonly SettingKey[];

function engineOptions(command: Command): Command {
  return addSettings(command, ENGINE_KEYS);
}

function sandboxOptions(command: Command): Command {
  return addSettings(engineOptions(command), [...SANDBOX_KEYS, "kubeWarmPool"]);
}

/** `--publish` and `--devcontainer`, for the commands whose sandbox lives while someone uses it (run, exec, shell, mcp). */
function publishOption(command: Command): Command {
  return addSettings(command, ["publish", "devcontainer"]);
}

/**
 * The process's one end (cli/session/): every way harness can be ended runs the same end of the
 * session. Installed before anything is written, so that even a closed pipe at start-up ends cleanly.
 */
function sessionEnd(): SessionEnd {
  const session: SessionEnd = new SessionEnd({
    // Only an error nobody caught exits from here, once every held end (each sandbox's stop) has run.
    exit: (cause) => {
      const crash = session.cause?.kind === "crash" ? session.cause.error : undefined;
      if (process.env["DEBUG"] && crash instanceof Error && crash.stack && !session.stderrGone)
        process.stderr.write(`${sanitizeForTerminal(crash.stack)}\n`);
      process.exit(exitCodeForEnd(cause));
    },
    say: (line) => {
      if (!session.stderrGone)
        process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
    },
  });
  watchProcessEnds(session);
  return session;
}

async function main(argv: string[], session: SessionEnd): Promise<number> {
  // Key by key, not dotenv.config(): the current directory is often a workspace the sandbox can write.
  loadDotenvFile(process.env, process.cwd());
  sanitizeDebugLogs();
  let exitCode: number = EXIT.ok;
  const interrupts = new Interrupts(session);
  const program = new Command("harness")
    .description("Run an LLM coding agent on a project inside a hardened Docker sandbox.")
    .version(HARNESS_VERSION)
    .exitOverride();

  addSettings(
    publishOption(
      sandboxOptions(
        program
          .command("run")
          .description("run the agent on a task (no task: an interactive prompt)")
          .argument("[task...]", "what the agent should do"),
      ),
    ),
    [...AGENT_KEYS, ...BLOCKLIST_KEYS, "transcript", "outputFormat", "maxBudgetUsd"],
  )
    .option(
      "-c, --continue",
      "go on with the last run of this workspace: its conversation, its transcript, fresh limits",
    )
    .option("--resume <id>", `go on with this run: ${RUN_REF_HELP}`)
    .option(
      "--fork <run@step>",
      "a new run from step N of RUN: its first N steps' conversation, checkpoint N restored into --workspace (new or empty)",
    )
    .addOption(
      new Option(
        "--checkpoints <what>",
        "'all': checkpoints keep what git ignores too (node_modules, build output), which by default they leave out",
      ).choices(["all"]),
    )
    .option("--no-checkpoints", "take no checkpoint of the workspace after each tool call")
    .action(async (task: string[], flags: Flags) => {
      const { runCommand } = await import("./cli/run/run-command.js");
      exitCode = await runCommand(task.join(" "), flags, interrupts);
    });

  const batch = sandboxOptions(
    program
      .command("batch")
      .description(
        "run many tasks (JSONL: id, workspace, task, optional per-task settings), each in its own sandbox, with one result line per task and a summary",
      )
      .argument("<tasks>", "TASKS.jsonl, one task a line (docs/batch.md)"),
  )
    .option("--concurrency <n>", `most tasks at once (default ${describeDefaultConcurrency()})`)
    .option(
      "--warm <n>",
      "containers made and started ahead of the tasks that will use them (bind isolation; default: the concurrency; 0: none)",
    )
    .option(
      "--results <file>",
      "results JSONL, one line per task (default: TASKS.results.jsonl beside the tasks file)",
    )
    .option(
      "--transcripts <dir>",
      "a transcript per task here (default: the results file's name + .transcripts/)",
    )
    .option(
      "--retry <which>",
      "run again, besides tasks without a result: failed (every non-success) or errors (Docker, API)",
    );
  addSettings(batch, [...AGENT_KEYS, ...BLOCKLIST_KEYS, "maxBudgetUsd"], {
    model: "model id for tasks that name none",
    maxTurns: `per task: ${SETTINGS.maxTurns.help}`,
    maxTokens: `per task: ${SETTINGS.maxTokens.help}`,
    maxTotalTokens: `per task: ${SETTINGS.maxTotalTokens.help}`,
    maxBudgetUsd: "stop starting tasks once the batch's estimated cost reaches this many US dollars",
  })
    .addOption(
      new Option("--output-format <format>", "the summary on stdout: text (default) or json").choices([
        "text",
        "json",
      ]),
    )
    .addHelpText(
      "after",
      [
        "",
        "Tasks sharing a workspace each get copy isolation (their changes are saved as a diff beside the transcript, never applied).",
        "Exit codes:",
        ...batchExitCodes(),
      ].join("\n"),
    )
    .action(async (tasks: string, flags: Flags) => {
      const { batchCommand } = await import("./cli/run/batch-command.js");
      exitCode = await batchCommand(tasks, flags, interrupts);
    });

  publishOption(
    sandboxOptions(
      program
        .command("exec")
        .description("run one command in the workspace's sandbox and exit with its exit code")
        .argument("<command...>", "the command (put it after --)"),
    ),
  ).action(async (args: string[], flags: Flags) => {
    const { execCommand } = await import("./cli/exec/exec-command.js");
    exitCode = await execCommand(args, flags, interrupts);
  });

  addSettings(
    publishOption(
      sandboxOptions(
        program
          .command("mcp")
          .description(
            "serve the sandbox's tools (bash, read_file, write_file, read_output, background_processes) to an MCP client over stdio",
          ),
      ),
    ),
    [...BLOCKLIST_KEYS, "transcript"],
  )
    .addOption(
      new Option(
        "--checkpoints <what>",
        "'all': checkpoints keep what git ignores too (node_modules, build output), which by default they leave out",
      ).choices(["all"]),
    )
    .option("--no-checkpoints", "take no checkpoint of the workspace after each tool call")
    .option(
      "--structured-content",
      "bash results carry MCP structured content too (stdout, stderr, exitCode… as fields, with an outputSchema), for programs: hosts such as Claude Code then show that JSON instead of the text",
    )
    .action(async (flags: Flags) => {
      const { mcpCommand } = await import("./cli/run/mcp-command.js");
      exitCode = await mcpCommand(flags, interrupts);
    });

  publishOption(
    sandboxOptions(
      program.command("shell").description("open an interactive shell in the workspace's sandbox"),
    ),
  ).action(async (flags: Flags) => {
    const { shellCommand } = await import("./cli/exec/container-commands.js");
    exitCode = await shellCommand(flags, interrupts);
  });

  sandboxOptions(
    program
      .command("replay")
      .description(
        "re-run a transcript's bash calls in a fresh sandbox (without --workspace: a new temporary directory) and check they reproduce",
      )
      .argument(
        "<run>",
        "a transcript (JSONL, written by harness run), or a past run: its id, a unique prefix or suffix of it, last or last~N",
      ),
  )
    .option("--ignore-output", "compare exit codes only, not stdout and stderr")
    .option("--keep", "keep the temporary workspace afterwards")
    .option(
      "--from <step>",
      "replay only the calls after step N, starting from checkpoint N (restored into the temporary or a new/empty --workspace)",
    )
    .addOption(
      new Option("--output-format <format>", "report format").choices(["text", "json"]).default("text"),
    )
    .action(async (run: string, flags: Flags) => {
      const { replayCommand } = await import("./cli/run/replay-command.js");
      exitCode = await replayCommand(run, flags, interrupts);
    });

  const runs = program
    .command("runs")
    .description("list past runs, newest first: when, status, turns, cost, size, workspace, task")
    .addOption(new Option("--output-format <format>", "text (default) or json").choices(["text", "json"]))
    .addHelpText("after", RUNS_HELP)
    .action(async (flags: Flags) => {
      const { runsListCommand } = await import("./cli/runs/runs-command.js");
      exitCode = await runsListCommand(flags);
    });

  runs
    .command("show")
    .description("show a run's steps: the task, each command with its exit code and notes, the final text")
    .argument("<id>", RUN_REF_HELP)
    .action(async (id: string) => {
      const { runsShowCommand } = await import("./cli/runs/runs-command.js");
      exitCode = await runsShowCommand(id);
    });

  runs
    .command("diff")
    .description(
      "the files one step changed (or the whole run) as a unified diff, from the run's checkpoints",
    )
    .argument("<id>", RUN_REF_HELP)
    .option("--step <n>", "only this step's change (step N: the Nth tool call)")
    .addOption(new Option("--output-format <format>", "text (default) or json").choices(["text", "json"]))
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { runsDiffCommand } = await import("./cli/runs/checkpoint-commands.js");
      const { processIo } = await import("./cli/runs/runs-command.js");
      // `runs` has its own --output-format: the one given after `diff` may land there.
      const flags = command.optsWithGlobals<{ step?: string; outputFormat?: string }>();
      exitCode = await runsDiffCommand(id, flags, processIo());
    });

  runs
    .command("restore")
    .description(
      "write the workspace as it was after step N (0: before the first call) into a new or empty DIR",
    )
    .argument("<id>", RUN_REF_HELP)
    .requiredOption("--step <n>", "the step whose checkpoint to restore")
    .requiredOption("--to <dir>", "a new or empty directory")
    .action(async (id: string, flags: { step?: string; to?: string }) => {
      const { runsRestoreCommand } = await import("./cli/runs/checkpoint-commands.js");
      const { processIo } = await import("./cli/runs/runs-command.js");
      exitCode = await runsRestoreCommand(id, flags, processIo());
    });

  runs
    .command("rm")
    .description("remove runs: their transcript and saved outputs (never one still running)")
    .argument("<id...>", "runs: ids, unique prefixes or suffixes of them, last or last~N")
    .action(async (ids: string[]) => {
      const { runsRmCommand } = await import("./cli/runs/runs-command.js");
      exitCode = await runsRmCommand(ids);
    });

  runs
    .command("prune")
    .description("apply the retention limits now (harness also does after every run)")
    .option("--dry-run", "only say what would be removed")
    .addHelpText("after", RUNS_HELP)
    .action(async (flags: { dryRun?: boolean }) => {
      const { runsPruneCommand } = await import("./cli/runs/runs-command.js");
      exitCode = await runsPruneCommand(flags);
    });

  program
    .command("restore-git")
    .description(
      "put back the git files a bind-mode run created or changed and harness moved aside (never over anything)",
    )
    .argument("<id>", "the id the end of that run printed")
    .action(async (id: string) => {
      const { restoreGitCommand } = await import("./cli/runs/restore-git-command.js");
      exitCode = await restoreGitCommand(id);
    });

  program
    .command("recover")
    .description(
      "finish a copy-mode apply that was interrupted after its commit point, or undo one interrupted before it (every workspace; the next command on a workspace does it for that workspace too)",
    )
    .action(async () => {
      const { recoverCommand } = await import("./cli/runs/recover-command.js");
      exitCode = await recoverCommand();
    });

  program
    .command("apply")
    .description(
      "review a kept copy-mode copy (harness ps lists them) and apply its changes to its workspace, as at the end of its session; the copy is removed once they land",
    )
    .argument("<id>", "the kept copy's id (a run's id, or the exec-/shell-/mcp- id its session printed)")
    .option("-y, --yes", "apply without asking (what --apply is at the end of a session)")
    .option("--apply", "the same as --yes")
    .action(async (id: string, flags: { yes?: boolean; apply?: boolean }) => {
      const { applyCommand } = await import("./cli/runs/apply-command.js");
      exitCode = await applyCommand(id, flags, interrupts);
    });

  addSettings(
    engineOptions(program.command("doctor")).description(
      "check whether harness can run here: engine, runtimes, image, workspace, disk",
    ),
    ["workspace", "image", "user", "runtime", "network", "context"],
    {
      workspace: "workspace to check",
      image: "check this image instead of harness's sandbox image",
      user: "the user sandbox commands would run as",
      runtime: "check this OCI runtime, e.g. runsc",
      network: "the sandbox network the runtime must work with",
      context: "Docker context (engine) to check",
    },
  )
    .addOption(new Option("--output-format <format>", "text (default) or json").choices(["text", "json"]))
    .addHelpText("after", () => DOCTOR_HELP_TEXT)
    .action(async (flags: Flags & { outputFormat?: string }) => {
      const { doctorCommand } = await import("./cli/doctor-command.js");
      exitCode = await doctorCommand(flags);
    });

  program
    .command("trust-env")
    .description(
      "load a .env harness doubts (a sandbox wrote it, or it changed during a run) again, as it is now: read it first",
    )
    .argument("[file]", "the .env file (default: ./.env)")
    .action(async (file: string | undefined) => {
      const { trustEnvCommand } = await import("./cli/dotenv/trust-env-command.js");
      exitCode = trustEnvCommand(file);
    });

  program
    .command("image")
    .description("build harness's sandbox image if sandbox/ changed, and print its tag")
    .action(async () => {
      const { imageCommand } = await import("./cli/exec/container-commands.js");
      exitCode = await imageCommand();
    });

  sandboxOptions(
    program
      .command("kube-template")
      .description(
        "print the SandboxTemplate (JSON, for kubectl apply -f -) of the pod harness makes on Kubernetes with these settings, for the SandboxWarmPool --kube-warm-pool claims from",
      )
      .argument("<name>", "the template's name"),
  ).action(async (name: string, flags: Flags) => {
    const { kubeTemplateCommand } = await import("./cli/exec/kube-template-command.js");
    exitCode = await kubeTemplateCommand(name, flags);
  });

  engineOptions(program.command("ps"))
    .description("list harness's sandbox containers (or pods)")
    .action(async (flags: Flags) => {
      const { psCommand } = await import("./cli/exec/container-commands.js");
      exitCode = await psCommand(flags);
    });

  addSettings(
    engineOptions(
      program
        .command("rm")
        .argument("[id]", "a kept copy to drop, its changes with it (harness ps lists them)"),
    ).description(
      "remove the workspace's sandbox container or pods (or all of them; kept copies stay), or drop the kept copy ID",
    ),
    ["workspace"],
    { workspace: "workspace whose container to remove" },
  )
    .option("--all", "remove every harness container")
    .option(
      "--cache",
      "remove the package caches (npm's and pip's downloads, one per workspace) instead, and only them; with --workspace, only that workspace's",
    )
    .option("--user <uid>", "with --cache: only this sandbox user's cache (default: every user's)")
    .action(async (id: string | undefined, flags: Flags & { all?: boolean; cache?: boolean }) => {
      const { rmCommand } = await import("./cli/exec/container-commands.js");
      exitCode = await rmCommand(flags, id);
    });

  oneLineUsageErrors(program);
  try {
    await program.parseAsync(attachOptionalValues(argv));
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "commander.helpDisplayed" || code === "commander.version" || code === "commander.help")
      return EXIT.ok;
    // commander already printed its own message for usage errors.
    if (code?.startsWith("commander.")) return EXIT.usage;
    return reportError(error);
  }
  return exitCode;
}

const session = sessionEnd();
const code = await main(process.argv, session);
// What ended the session, when something did, is what the exit code says.
process.exitCode = session.cause === undefined ? code : exitCodeForEnd(session.cause);
