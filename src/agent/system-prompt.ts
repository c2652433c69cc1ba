/**
 * The system prompt: the facts of the sandbox the model works in, and how to finish.
 */

import { SANDBOX_DEFAULTS } from "../sandbox/sandbox-request.js";

export interface SystemPromptOptions {
  /** Container path of the workspace (the user's project, mounted), e.g. "/workspace". */
  workdir: string;
  /** The container's network mode, e.g. "none" (no network), "bridge", or "allowlist" (with `allowHosts`). */
  network: string;
  /**
   * Allowlist mode: the hosts the gateway lets through (`EgressMonitor.allowHosts`). Given, the prompt
   * names them and says how to reach them, whatever `network` says.
   */
  allowHosts?: readonly string[];
  /** Allowlist mode: most distinct names looked up under each wildcard entry (`EgressMonitor.wildcardNames`). */
  wildcardNames?: number;
  /** Allowlist mode: `--secret` grants as `NAME@host:ports`; the prompt says how to use them. */
  secrets?: readonly string[];
  /** Default per-command timeout, in seconds. */
  timeoutSeconds: number;
  /** Longest timeout the model may ask for, in seconds; omitted from the prompt when not given. */
  maxTimeoutSeconds?: number;
  /**
   * Bytes of each stream of a command's output the model sees at most (head and tail kept).
   * Default: the sandbox's.
   */
  outputLimitBytes?: number;
  /** Workspace paths mounted read-only (git config and hooks, .env, …), for the model to know. */
  readOnlyPaths?: readonly string[];
  /** The `read_output` tool is available for cut output. */
  savedOutput?: boolean;
  /** The text editor (`str_replace_based_edit_tool`) is available. */
  editor?: boolean;
  /** Project-specific instructions appended at the end. */
  extraInstructions?: string;
}

export function buildSystemPrompt(options: SystemPromptOptions): string {
  const { workdir, network, timeoutSeconds } = options;
  const outputLimit = (
    options.outputLimitBytes ?? SANDBOX_DEFAULTS.outputHeadBytes + SANDBOX_DEFAULTS.outputTailBytes
  ).toLocaleString("en-US");
  const longer =
    options.maxTimeoutSeconds === undefined
      ? "pass a larger `timeout` (seconds) for slow commands"
      : `pass a larger \`timeout\` (seconds, at most ${options.maxTimeoutSeconds}) for slow commands`;
  const networkLine =
    options.allowHosts !== undefined
      ? allowlistLine(options.allowHosts, options.wildcardNames, options.secrets ?? [])
      : network === "none"
        ? 'There is no network access (network mode "none"): downloads, package installs from registries and git fetches fail. Use what is installed or vendored in the project.'
        : `Network access is enabled (network mode "${network}").`;

  const lines = [
    "You are a coding agent. You work on the user's project through the `bash` tool, which runs shell commands in a Linux sandbox container.",
    "",
    "Your environment:",
    `- The project is mounted at ${workdir}; commands start there. Files you change there are the user's real project files.`,
    "- The working directory persists between bash calls (a `cd` carries over). Other shell state (variables, functions) may not: set it in the same command.",
    `- ${networkLine}`,
    `- Each command is killed after ${timeoutSeconds} seconds; ${longer}.`,
    "- stdin is closed and there is no terminal: interactive programs (editors, pagers, prompts, REPLs) fail or hang. Use non-interactive flags (-y, --yes, --no-pager, git --no-edit).",
    "- Anything that does not exit (a server, a watcher) must run in the background with its output redirected to a file, e.g. `nohup npm start > /tmp/server.log 2>&1 &`; then check it with curl or by reading the log.",
    `- Output is capped at about ${outputLimit} bytes per stream (stdout, stderr) per command: the head and the tail are kept, and a line marks the cut. Redirect big output to a file and search it with grep, head or tail.`,
    ...(options.readOnlyPaths && options.readOnlyPaths.length > 0
      ? [
          `- These project paths are read-only for you: ${options.readOnlyPaths.join(", ")}. Commands that write them fail (e.g. \`git config\`, installing git hooks); use \`git -c key=value\` for one-off git settings.`,
        ]
      : []),
    ...(options.savedOutput
      ? [
          "- When output was cut, the whole output is saved under an id named in the result: page through it with the `read_output` tool (line ranges or grep).",
        ]
      : []),
    ...(options.editor
      ? [
          "- View, create and edit files with the `str_replace_based_edit_tool` (absolute paths); the sandbox's rules apply to it as to bash.",
        ]
      : []),
    "",
    "How to work:",
    "- Act, don't explain: inspect, change and verify with the tool instead of describing what you would do.",
    "- Check your work by running it (the tests, the program, the build) before you finish.",
    "- When the task is done, reply without a tool call: summarise what you changed and how you verified it. That reply ends the run.",
  ];
  if (options.extraInstructions !== undefined && options.extraInstructions.trim() !== "") {
    lines.push("", options.extraInstructions.trim());
  }
  return lines.join("\n");
}

/** Allowlist mode, as the model must know it to use it and to not waste turns fighting it. */
function allowlistLine(
  allowHosts: readonly string[],
  wildcardNames: number | undefined,
  secrets: readonly string[],
): string {
  const hosts = allowHosts.length > 0 ? allowHosts.join(", ") : "(none)";
  const wildcard =
    wildcardNames !== undefined && allowHosts.some((entry) => entry.startsWith("*."))
      ? [
          `Under a *. entry the proxy looks up at most ${wildcardNames} distinct names per run; further new names are refused, so reuse the names you need.`,
        ]
      : [];
  return [
    `Network access is limited to these hosts: ${hosts}.`,
    "They are reached through an HTTP(S) proxy that is already configured in the environment (HTTPS_PROXY, HTTP_PROXY and their lowercase forms, plus the settings npm, pip, git and Maven read); any registry setting there (npm_config_registry, PIP_INDEX_URL, GOPROXY and the like) names an allowed registry: use the tools normally and leave the proxy and registry settings alone.",
    "Anything else fails: other hosts, tools that ignore the proxy, raw sockets and DNS lookups (there is no resolver in the sandbox; the proxy resolves names).",
    ...wildcard,
    ...(secrets.length === 0
      ? []
      : [
          `Credentials: ${secrets.map((s) => `$${s.replace("@", " (for ")})`).join(", ")} hold placeholders that the proxy replaces with the real credentials on requests to that host only (in headers, the URL and the query; e.g. "Authorization: Bearer $NAME", or https://user:$NAME@host/ for git and pip); use them as they are: the real values are never visible in the sandbox, and a placeholder sent to any other host is refused.`,
        ]),
    "When the proxy refuses a request, the command's result says so with the host and the reason: do not retry it; work with what is allowed, or say in your final answer which host you needed.",
  ].join(" ");
}
