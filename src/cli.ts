/**
 * The command line. The only place that loads `.env`, sets `process.exitCode`, and wires the parts
 * together. Heavy modules load inside each command, so `harness exec` never pays for the model SDK.
 */
import { Command, Option } from "commander";
import { describeDefaultConcurrency } from "./batch/default-concurrency.js";
import { loadDotenvFile } from "./cli/dotenv-load.js";
import { EXIT } from "./cli/exit-codes.js";
import { Interrupts } from "./cli/interrupts.js";
import { reportError } from "./cli/report-error.js";
import type { CliFlags } from "./config.js";
import { RUNS_HELP } from "./runs/retention-defaults.js";
import { sanitizeDebugLogs } from "./terminal/debug-log.js";
import { HARNESS_VERSION } from "./version.js";

/** `harness doctor --help`: kept here so --help does not load the doctor's modules. */
const DOCTOR_HELP_TEXT = `
Each line is ok, warn (harness runs, with a limit worth knowing) or fail (harness cannot run here),
and says what to do. Exit status: 0 when harness can run, 1 when a check failed.`;

type Flags = CliFlags & Record<string, unknown>;

/** For repeatable options: each value appended to the ones before. */
function collect(value: string, previous: unknown): string[] {
  return [...(Array.isArray(previous) ? previous : []), value];
}

/** `--publish`, for the commands whose sandbox lives while someone uses it (run, exec, shell, mcp). */
function publishOption(command: Command): Command {
  return command.option(
    "--publish <port[:hostport]>",
    "make a server on this port of the sandbox's loopback reachable at the host's 127.0.0.1:HOSTPORT (default the same port) while harness runs (repeatable); the sandbox still has no network",
    collect,
  );
}

/** `--engine` and the Kubernetes engine's own options. */
function engineOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--engine <name>",
        "where the sandbox runs: docker (default; Docker or Podman) or kubernetes (a pod; env HARNESS_ENGINE)",
      ).choices(["docker", "kubernetes"]),
    )
    .option(
      "--kube-context <name>",
      "kubernetes: the kubeconfig context to use (default: its current one; KUBECONFIG is read as kubectl reads it)",
    )
    .option(
      "--namespace <name>",
      "kubernetes: the namespace of the sandbox pods (default harness; env HARNESS_NAMESPACE)",
    )
    .option(
      "--kube-seccomp-profile <path>",
      "kubernetes: a Localhost seccomp profile the nodes hold, e.g. harness/sandbox.json (harness's own; default: the runtime's)",
    );
}

function sandboxOptions(command: Command): Command {
  return engineOptions(command)
    .option("-w, --workspace <dir>", "project directory to mount in the sandbox (default: current directory)")
    .option("--image <name>", "use this existing image instead of building harness's sandbox image")
    .option("--network <mode>", "sandbox network: none (default), bridge or a network name")
    .option(
      "--user <uid[:gid]>",
      "run sandbox commands as this user (default: the workspace owner; never root)",
    )
    .option("--runtime <name>", "OCI runtime for the sandbox, e.g. runsc (gVisor) where installed")
    .option(
      "--context <name>",
      "Docker context (engine) to use, as 'docker context ls' lists them (default: DOCKER_HOST, DOCKER_CONTEXT, the current context)",
    )
    .option("--memory <size>", "sandbox memory limit, e.g. 2g")
    .option("--tmp-size <size>", "size of the sandbox's /tmp (tmpfs, counts against memory), e.g. 512m")
    .option("--home-size <size>", "size of the sandbox's home directory (tmpfs), e.g. 256m")
    .option("--cpus <n>", "sandbox CPU limit in cores")
    .option("--pids <n>", "sandbox process limit")
    .option(
      "--protect <path>",
      "also mount this workspace path read-only (repeatable; always: .git/config, .git/hooks, .env, .envrc, .vscode, .devcontainer)",
      collect,
    )
    .option(
      "--no-protect",
      "mount nothing read-only: the task may rewrite git hooks and config the host later runs",
    )
    .option(
      "--allow-host <pattern>",
      "allowlist mode: let the sandbox reach this host through harness's gateway (repeatable; example.com, *.example.org, host:8443; default ports 443 and 80)",
      collect,
    )
    .option(
      "--allow <preset>",
      "allowlist mode: allow a tool's registry as the host's own config names it (repeatable): npm, pypi (or pip), git=HOST",
      collect,
    )
    .option(
      "--allow-private",
      "allowlist mode: allowed names may resolve to private, loopback or link-local addresses (internal registries)",
    )
    .option(
      "--secret <NAME@HOST>",
      "allowlist mode: the sandbox gets a placeholder in NAME; the gateway puts $NAME's real value (read here) into requests to HOST only (repeatable; allows HOST)",
      collect,
    )
    .option(
      "--allow-request <METHODS@HOST/PATH>",
      "allowlist mode: limit an allowed host to these methods under this path prefix (repeatable; e.g. GET,HEAD@api.example.org/v1/)",
      collect,
    )
    .option(
      "--secret-in-body <NAME>",
      "also put NAME's value into request bodies to its host (not only headers, URL and query)",
      collect,
    )
    .option("--egress-limit <size>", "allowlist mode: most bytes through the gateway per run (default 2g)")
    .option(
      "--egress-wildcard-names <n>",
      "allowlist mode: most distinct names looked up under each *.suffix entry per run (default 64)",
    )
    .option("--timeout <seconds>", "per-command timeout in seconds (default 120)")
    .addOption(
      new Option(
        "--isolation <mode>",
        "bind: mount the workspace (default); copy: work on a copy, show the changes, apply on request",
      ).choices(["bind", "copy"]),
    )
    .option("--copy-limit <size>", "copy mode: most file content copied in and out (default 1g)")
    .option(
      "--copy-max-files <n>",
      "copy mode: most files, directories and symlinks copied in and out (default 100000)",
    )
    .option("--apply", "copy mode: apply the sandbox's changes to the workspace without asking")
    .option("--no-apply", "copy mode: show the sandbox's changes but never apply them");
}

async function main(argv: string[]): Promise<number> {
  // Key by key, not dotenv.config(): the current directory is often a workspace the sandbox can write.
  loadDotenvFile(process.env, process.cwd());
  sanitizeDebugLogs();
  let exitCode: number = EXIT.ok;
  const interrupts = new Interrupts(() => process.exit(EXIT.interrupted));
  const program = new Command("harness")
    .description("Run an LLM coding agent on a project inside a hardened Docker sandbox.")
    .version(HARNESS_VERSION)
    .showHelpAfterError()
    .exitOverride();

  publishOption(
    sandboxOptions(
      program
        .command("run")
        .description("run the agent on a task (no task: an interactive prompt)")
        .argument("[task...]", "what the agent should do"),
    ),
  )
    .option("--model <id>", "model id (default: MODEL_ID from .env)")
    .option("--max-turns <n>", "stop after this many model calls (default 50)")
    .option("--max-tokens <n>", "output budget of one model response (default 8000)")
    .option("--max-total-tokens <n>", "token budget over the whole run")
    .option("--no-blocklist", "turn off the command blocklist (the container stays the boundary)")
    .addOption(new Option("--block <regex...>", "extra blocklist patterns"))
    .option("--transcript <path>", "write the JSONL transcript here (default: ~/.local/state/harness/runs/)")
    .option("--output-format <format>", "what stdout carries: text (default), json or stream-json")
    .option("--max-budget-usd <usd>", "stop the run when its estimated cost reaches this many US dollars")
    .option(
      "-c, --continue",
      "go on with the last run of this workspace: its conversation, its transcript, fresh limits",
    )
    .option(
      "--resume <id>",
      "go on with this run: an id or unique prefix (harness runs lists them), or a transcript path",
    )
    .option(
      "--fork <run@step>",
      "a new run from step N of RUN: its first N steps' conversation, checkpoint N restored into --workspace (new or empty)",
    )
    .option("--no-checkpoints", "take no checkpoint of the workspace after each tool call")
    .action(async (task: string[], flags: Flags) => {
      const { runCommand } = await import("./cli/run-command.js");
      exitCode = await runCommand(task.join(" "), flags, interrupts);
    });

  sandboxOptions(
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
    )
    .option(
      "--max-budget-usd <usd>",
      "stop starting tasks once the batch's estimated cost reaches this many US dollars",
    )
    .option("--model <id>", "model id for tasks that name none (default: MODEL_ID from .env)")
    .option("--max-turns <n>", "per task: stop after this many model calls (default 50)")
    .option("--max-tokens <n>", "per task: output budget of one model response (default 8000)")
    .option("--max-total-tokens <n>", "per task: token budget over the run")
    .option("--no-blocklist", "turn off the command blocklist (the container stays the boundary)")
    .addOption(new Option("--block <regex...>", "extra blocklist patterns"))
    .addOption(
      new Option("--output-format <format>", "the summary on stdout: text (default) or json").choices([
        "text",
        "json",
      ]),
    )
    .addHelpText(
      "after",
      "\nTasks sharing a workspace each get copy isolation (their changes are saved as a diff beside the transcript, never applied).\nExit codes: 0 every task finished, 1 some ended with an error (Docker, API; --retry errors), 2 bad usage or tasks file,\n3 --max-budget-usd stopped the batch, 130 interrupted (run the same command again to resume).",
    )
    .action(async (tasks: string, flags: Flags) => {
      const { batchCommand } = await import("./cli/batch-command.js");
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
    const { execCommand } = await import("./cli/exec-command.js");
    exitCode = await execCommand(args, flags, interrupts.begin());
  });

  publishOption(
    sandboxOptions(
      program
        .command("mcp")
        .description(
          "serve the sandbox's tools (bash, read_file, write_file, read_output, background_processes) to an MCP client over stdio",
        ),
    ),
  )
    .option("--no-blocklist", "turn off the command blocklist (the container stays the boundary)")
    .addOption(new Option("--block <regex...>", "extra blocklist patterns"))
    .option("--transcript <path>", "write the JSONL transcript here (default: ~/.local/state/harness/runs/)")
    .action(async (flags: Flags) => {
      const { mcpCommand } = await import("./cli/mcp-command.js");
      exitCode = await mcpCommand(flags, interrupts.begin());
    });

  publishOption(
    sandboxOptions(
      program.command("shell").description("open an interactive shell in the workspace's sandbox"),
    ),
  ).action(async (flags: Flags) => {
    const { shellCommand } = await import("./cli/container-commands.js");
    exitCode = await shellCommand(flags);
  });

  sandboxOptions(
    program
      .command("replay")
      .description(
        "re-run a transcript's bash calls in a fresh sandbox (without --workspace: a new temporary directory) and check they reproduce",
      )
      .argument("<transcript>", "JSONL transcript written by harness run"),
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
    .action(async (transcript: string, flags: Flags) => {
      const { replayCommand } = await import("./cli/replay-command.js");
      exitCode = await replayCommand(transcript, flags, interrupts.begin());
    });

  const runs = program
    .command("runs")
    .description("list past runs, newest first: when, status, turns, cost, size, workspace, task")
    .addOption(new Option("--output-format <format>", "text (default) or json").choices(["text", "json"]))
    .addHelpText("after", RUNS_HELP)
    .action(async (flags: Flags) => {
      const { runsListCommand } = await import("./cli/runs-command.js");
      exitCode = await runsListCommand(flags);
    });

  runs
    .command("show")
    .description("show a run's steps: the task, each command with its exit code and notes, the final text")
    .argument("<id>", "run id or a unique prefix of one (harness runs lists them), or a transcript path")
    .action(async (id: string) => {
      const { runsShowCommand } = await import("./cli/runs-command.js");
      exitCode = await runsShowCommand(id);
    });

  runs
    .command("diff")
    .description(
      "the files one step changed (or the whole run) as a unified diff, from the run's checkpoints",
    )
    .argument("<id>", "run id or a unique prefix of one, or a transcript path")
    .option("--step <n>", "only this step's change (step N: the Nth tool call)")
    .addOption(new Option("--output-format <format>", "text (default) or json").choices(["text", "json"]))
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { runsDiffCommand } = await import("./cli/checkpoint-commands.js");
      const { processIo } = await import("./cli/runs-command.js");
      // `runs` has its own --output-format: the one given after `diff` may land there.
      const flags = command.optsWithGlobals<{ step?: string; outputFormat?: string }>();
      exitCode = await runsDiffCommand(id, flags, processIo());
    });

  runs
    .command("restore")
    .description(
      "write the workspace as it was after step N (0: before the first call) into a new or empty DIR",
    )
    .argument("<id>", "run id or a unique prefix of one, or a transcript path")
    .requiredOption("--step <n>", "the step whose checkpoint to restore")
    .requiredOption("--to <dir>", "a new or empty directory")
    .action(async (id: string, flags: { step?: string; to?: string }) => {
      const { runsRestoreCommand } = await import("./cli/checkpoint-commands.js");
      const { processIo } = await import("./cli/runs-command.js");
      exitCode = await runsRestoreCommand(id, flags, processIo());
    });

  runs
    .command("rm")
    .description("remove runs: their transcript and saved outputs (never one still running)")
    .argument("<id...>", "run ids or unique prefixes")
    .action(async (ids: string[]) => {
      const { runsRmCommand } = await import("./cli/runs-command.js");
      exitCode = await runsRmCommand(ids);
    });

  runs
    .command("prune")
    .description("apply the retention limits now (harness also does after every run)")
    .option("--dry-run", "only say what would be removed")
    .addHelpText("after", RUNS_HELP)
    .action(async (flags: { dryRun?: boolean }) => {
      const { runsPruneCommand } = await import("./cli/runs-command.js");
      exitCode = await runsPruneCommand(flags);
    });

  program
    .command("restore-git")
    .description(
      "put back the git files a bind-mode run created or changed and harness moved aside (never over anything)",
    )
    .argument("<id>", "the id the end of that run printed")
    .action(async (id: string) => {
      const { restoreGitCommand } = await import("./cli/restore-git-command.js");
      exitCode = await restoreGitCommand(id);
    });

  engineOptions(program.command("doctor"))
    .description("check whether harness can run here: engine, runtimes, image, workspace, disk")
    .option("-w, --workspace <dir>", "workspace to check (default: current directory)")
    .option("--image <name>", "check this image instead of harness's sandbox image")
    .option("--user <uid[:gid]>", "the user sandbox commands would run as")
    .option("--runtime <name>", "check this OCI runtime, e.g. runsc")
    .option("--network <mode>", "the sandbox network the runtime must work with (default none)")
    .option("--context <name>", "Docker context (engine) to check")
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
      const { trustEnvCommand } = await import("./cli/trust-env-command.js");
      exitCode = trustEnvCommand(file);
    });

  program
    .command("image")
    .description("build harness's sandbox image if sandbox/ changed, and print its tag")
    .action(async () => {
      const { imageCommand } = await import("./cli/container-commands.js");
      exitCode = await imageCommand();
    });

  engineOptions(program.command("ps"))
    .description("list harness's sandbox containers (or pods)")
    .action(async (flags: Flags) => {
      const { psCommand } = await import("./cli/container-commands.js");
      exitCode = await psCommand(flags);
    });

  engineOptions(program.command("rm"))
    .description("remove the workspace's sandbox container or pods (or all of them)")
    .option("-w, --workspace <dir>", "workspace whose container to remove (default: current directory)")
    .option("--all", "remove every harness container")
    .action(async (flags: Flags & { all?: boolean }) => {
      const { rmCommand } = await import("./cli/container-commands.js");
      exitCode = await rmCommand(flags);
    });

  try {
    await program.parseAsync(argv);
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

process.exitCode = await main(process.argv);
