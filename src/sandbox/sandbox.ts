/**
 * What a sandbox is to the rest of harness: the contract that `agent/`, `tools/`, `output/` and the
 * CLI hold. Only `src/sandbox/` knows it is Docker (`docker/`), how a workspace is copied (`copy/`)
 * and how the host is written safely (`host/`).
 */

import type { Change, ChangeCounts } from "./copy/tree-diff.js";
import type { SkippedPath } from "./copy/workspace-scan.js";
import type { Refusal } from "./host/paths/strict-paths.js";
import type { IsolationKind } from "./sandbox-request.js";

/** What the sandbox changed in its copy of the workspace, as shown to the user. */
export interface WorkspaceChanges {
  /** Added, modified and deleted paths, sorted. */
  changes: Change[];
  counts: ChangeCounts;
  /** One "A path" / "M path" / "D path" line per change, then the counts. */
  summary: string;
  /** Unified diffs of changed text files (capped; binary and large files get a one-line note). */
  diff: string;
  /** Host paths that were never copied in (special or unreadable files) and so are not compared. */
  skipped: SkippedPath[];
  /** Names in the sandbox's archive that are not safe paths; never applied. */
  unsafeNames: string[];
  /** Changed paths the user also changed on the host during the run: shown, never applied. */
  conflicts: string[];
  /** Changes the apply will refuse (protected paths, git's rule), as the review found them. */
  refused?: Refusal[];
}

/** What `applyChanges` did: refusals are data, by path and reason. */
export interface ApplyResult {
  written: string[];
  deleted: string[];
  refused: Refusal[];
  /** Written with an adjustment, e.g. setuid bits stripped. */
  notes: Refusal[];
}

/** Options for one command. */
export interface ExecOptions {
  /**
   * Kill the command (TERM, then KILL) after this many milliseconds. Default: the sandbox's default
   * timeout.
   */
  timeoutMs?: number;
  /** Aborting kills the command the same way a timeout does; the result has `isCanceled: true`. */
  signal?: AbortSignal;
  /**
   * Called with each chunk of output as it arrives: every byte, also those cut from the result.
   * Returning a promise asks for backpressure: no more output is read from the command until it
   * settles (the chunks of a read already under way, at most 64 KiB, may still come), so a command
   * that keeps writing blocks on its full pipe instead of piling up in host memory. The timeout and
   * `signal` still apply while waiting. Once the command is being killed, output is read again
   * whatever the consumer does, and if a chunk comes while a promise is still pending, the consumer
   * gets nothing more from that command (no gaps: its output just stops there).
   *
   * Contract: should not throw or reject; if it does, that is logged and ignored (a rejected promise
   * counts as settled).
   */
  onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void | Promise<void>;
  /**
   * Who asked for the command (the `tool_use` id): network connections opened while it runs carry it
   * in their `EgressRecord`.
   */
  callId?: string | undefined;
}

/** What one command did, as the caller gets it. */
export interface ExecResult {
  /** The command as given. */
  command: string;
  /**
   * Standard output, decoded as UTF-8, NULs and bytes that are not UTF-8 shown as `\xNN` escapes
   * (counted in `notTextBytes`); head and tail kept when over the cap.
   */
  stdout: string;
  /** Standard error, kept apart from stdout, capped the same way. */
  stderr: string;
  /** The exit code; `undefined` when the command never ran (blocked, sandbox failure before start). */
  exitCode: number | undefined;
  /** True when the command did not succeed: nonzero exit, timeout, cancel, or never ran. */
  failed: boolean;
  /** True when the command was killed because it ran past its timeout. */
  timedOut: boolean;
  /** True when the command was killed because the caller aborted (Ctrl-C). */
  isCanceled: boolean;
  /** True when stdout or stderr was cut to fit the cap. */
  isTruncated: boolean;
  /**
   * True when the kernel's OOM killer killed a process of this command (the container's cgroup counter
   * moved).
   */
  oomKilled: boolean;
  /** Total bytes the command wrote to stdout, including any that were cut. */
  stdoutBytes: number;
  /** Total bytes the command wrote to stderr, including any that were cut. */
  stderrBytes: number;
  /**
   * Bytes of the kept output that `stdout` / `stderr` show as `\xNN` escapes instead of as themselves
   * (NULs, bytes that are not valid UTF-8): the text is then not byte-exact, and the tool result says
   * so. Absent when every kept byte is text.
   */
  notTextBytes?: { stdout: number; stderr: number } | undefined;
  /** Wall-clock time from start to finish, in milliseconds. */
  durationMs: number;
  /** The working directory the command ran in. */
  cwd: string;
  /** One line saying what went wrong, e.g. "Command timed out after 5000 milliseconds"; empty on success. */
  shortMessage: string;
  /**
   * Things the sandbox had to do that the model should know about, e.g. "the sandbox was restarted
   * because every process in it was killed; the working directory was reset to /workspace".
   */
  notices: string[];
  /**
   * Allowlist mode: connections the gateway refused while this command ran (host, reason), so the
   * model can be told instead of retrying blindly. Absent when the sandbox has no gateway.
   */
  egressDenied?: readonly EgressDenial[] | undefined;
  /**
   * Jobs still running in the sandbox's background when the command ended (a server started with
   * `nohup … &` by this command or an earlier one, `setsid` or not), oldest first, so the model hears
   * of them again. Absent when there are none, or when the command was killed or its end not seen.
   * In a sandbox shared by two harness processes, the other's jobs are listed too.
   */
  background?: readonly BackgroundProcess[] | undefined;
}

/** A job left running in the sandbox's background. */
export interface BackgroundProcess {
  /** Its command line as `ps` shows it: whitespace collapsed, cut to 200 characters. */
  command: string;
  /** Seconds since it started. */
  ageSeconds: number;
}

/** One connection the gateway refused. */
export interface EgressDenial {
  /** The host as the client asked for it (name or IP literal). */
  host: string;
  port: number;
  /** Why, in words the model and the user can act on, e.g. "not on the allowlist (--allow-host example.net)". */
  reason: string;
}

/** One connection (or one plain-HTTP request) through the gateway, allowed or not. */
export interface EgressRecord {
  /** When it was opened, ISO-8601. */
  time: string;
  /** `ExecOptions.callId` of the command running when it was opened; absent between commands. */
  callId?: string | undefined;
  /** The host as the client asked for it. */
  host: string;
  port: number;
  /** "CONNECT" for an HTTPS tunnel, else the HTTP method of a forwarded plain-HTTP request. */
  method: string;
  allowed: boolean;
  /** Why it was refused, or why an allowed one ended early (idle, time or byte limit, origin unreachable). */
  reason?: string | undefined;
  /** The address connected to, once resolved (allowed connections only). */
  address?: string | undefined;
  /** HTTP status sent to the client: 403 for a refusal, the origin's status for plain HTTP. */
  status?: number | undefined;
  /**
   * Set when the host is a name under a wildcard entry (`*.example.org`) that no earlier request of
   * the run had the gateway look up: each distinct name looked up on the host appears once, here.
   */
  lookedUp?: string | undefined;
  /**
   * `--secret` names whose value the gateway put into this request (never the values), or, on a
   * refusal for a value or placeholder sent to the wrong host, the secret it belonged to.
   */
  secrets?: string[] | undefined;
  /** Bytes on the wire to the origin (request lines, headers, bodies, framing), and back. */
  bytesUp: number;
  bytesDown: number;
  /** From open to close, in milliseconds. */
  durationMs: number;
}

/** Allowlist mode as the rest of harness sees it: the policy, and the records as they come. */
export interface EgressMonitor {
  /** The allow entries in force, normalized (`host:port` pairs as matched), for the system prompt. */
  readonly allowHosts: readonly string[];
  readonly allowPrivate: boolean;
  /** Most bytes the run may carry. */
  readonly limitBytes: number;
  /** Most distinct names looked up under each wildcard entry in the run. */
  readonly wildcardNames?: number | undefined;
  /** `--secret` grants as `NAME@host:ports` (names, never values). */
  readonly secrets?: readonly string[] | undefined;
  /**
   * Calls `listener` with each record when its connection ends (a refusal: at once). Returns the
   * unsubscribe function. Contract: the listener must not throw.
   */
  subscribe(listener: (record: EgressRecord) => void): () => void;
}

/** One `--publish`: a port inside the sandbox, reachable on the host's loopback. */
export interface PublishedPort {
  /** The port a server listens on inside the sandbox (its 127.0.0.1). */
  port: number;
  /** The port on the host's 127.0.0.1 that reaches it. */
  hostPort: number;
}

/** One connection through a published port, written when it ended. */
export interface PublishRecord {
  /** When it was accepted, ISO-8601. */
  time: string;
  port: number;
  hostPort: number;
  /** The host-side client, "address:port" (always a loopback address). */
  client: string;
  /** Bytes from the host's client to the sandbox's server, and back. */
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
  /** Why it could not be forwarded (nothing listening in the sandbox, too many connections, …). */
  error?: string | undefined;
}

/** `--publish` as the rest of harness sees it: the ports, and the connections as they end. */
export interface PublishMonitor {
  readonly ports: readonly PublishedPort[];
  /**
   * Calls `listener` with each record when its connection ends. Returns the unsubscribe function.
   * Contract: the listener must not throw.
   */
  subscribe(listener: (record: PublishRecord) => void): () => void;
}

/** The sandbox as reports show it (stream-json's init event, the system prompt): no engine detail. */
export interface SandboxDescription {
  /** The engine's id for it (a container id). */
  id: string;
  isolation: IsolationKind;
  /** Real host path of the workspace. */
  workspace: string;
  /** Where the workspace appears inside. */
  workdir: string;
  image: string;
  /** "uid:gid" commands run as. */
  user: string;
  network: string;
  runtime: string | undefined;
  limits: { memoryBytes: number; cpus: number; pidsLimit: number };
  /** Workspace paths the sandbox cannot write (bind mode's protected paths). */
  readOnlyPaths: readonly string[];
}

/**
 * Copy isolation: the sandbox worked on a copy of the workspace; its changes reach the host only
 * through this, after review.
 */
export interface CopiedWorkspace {
  /** What the sandbox changed in its copy, compared with the host workspace now. Stops the sandbox first. */
  exportChanges(): Promise<WorkspaceChanges>;
  /** Writes reviewed changes to the host workspace; refused paths are in the result, not thrown. */
  applyChanges(reviewed: WorkspaceChanges): Promise<ApplyResult>;
  /**
   * The changes landed, were dropped by the user, or there were none: the copy goes when the sandbox
   * stops. Without this, a copy the caller asked to keep (`harness run`, `exec`, `shell`, `mcp`)
   * outlives the session until `harness apply ID` lands it or `harness rm ID` drops it.
   */
  settle(): void;
  /**
   * The sandbox's copy as it is now, entry by entry (a checkpoint reads it; src/checkpoints/). Each
   * file's `content` must be consumed (or left) before the next entry is asked for; stopping early
   * lets go of the stream. Rejects with `SandboxError` when the copy cannot be read.
   */
  entries(): AsyncIterable<WorkspaceEntry>;
  /**
   * Every path of the copy with its lstat, nothing followed nor read (a checkpoint compares it with
   * the previous step's; src/checkpoints/copy-snapshot.ts). `prune`: directories listed but not
   * walked; more than `maxEntries` paths end it with `complete: false`. Rejects with `SandboxError`
   * when the listing cannot be run or read.
   */
  list(prune: readonly string[], maxEntries: number): Promise<CopyListing>;
  /**
   * The regular files named, as "file" entries with their content (consume each before the next).
   * A path that is no longer a regular file beneath the workdir (a link, a fifo, gone), or that
   * changed while it was read, is absent. Rejects with `SandboxError` when it cannot be read.
   */
  fetch(paths: readonly string[]): AsyncIterable<WorkspaceEntry>;
}

/** The copy's paths with their lstat, as `CopiedWorkspace.list` gives them. */
export interface CopyListing {
  /** The sandbox's clock when the listing began, in ms: a path changed since then may look unchanged. */
  startedMs: number;
  /** Parents before children; a directory's own entries together. */
  paths: ListedPath[];
  /** False when `maxEntries` was reached (the listing stopped). */
  complete: boolean;
  /** Paths left out: a name or link target that is not UTF-8, an unsafe name. */
  skipped: Array<{ path: string; reason: string }>;
}

/** One path of a listing. */
export interface ListedPath {
  /** Workspace-relative, `/`-separated, checked safe. */
  path: string;
  /** "unreadable": a directory that could not be opened (`detail` says why). */
  kind: "directory" | "file" | "symlink" | "other" | "unreadable";
  /** Permission bits (0o777). */
  mode: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  /**
   * Kind, mode, size, mtime and ctime in ns, inode, as the listing gave them: equal keys mean lstat
   * saw nothing change.
   */
  key: string;
  /** A symlink's target; the kind of an "other" (fifo, socket…); why a directory is unreadable. */
  detail: string;
}

/** One path of the sandbox's copy of the workspace. */
export interface WorkspaceEntry {
  /** Workspace-relative path, `/`-separated, checked safe (or, for "unsafe name", the raw name). */
  path: string;
  /** "file", "directory", "symlink", "hard link" (another name of an earlier file), "unsafe name", or another kind (fifo, …). */
  type: string;
  /** Permission bits (0o777). */
  mode: number;
  /** Content bytes (files). */
  size: number;
  /** Modification time in ms (the archive's, whole seconds on some engines). */
  mtimeMs: number;
  /** A symlink's target text; a hard link's earlier path. */
  linkname?: string;
  /** A file's content, streamed. */
  content?: AsyncIterable<Buffer>;
}

/**
 * A long-lived isolated environment that runs shell commands.
 *
 * Contract: `exec` resolves for anything the *command* does (nonzero exit, timeout, cancel, flood,
 * killing every process, exhausting pids or memory). It rejects with `SandboxError` only when the
 * infrastructure fails and cannot be recovered (daemon unreachable, container cannot be recreated).
 */
export interface Sandbox extends AsyncDisposable {
  /** Container path where the workspace appears, e.g. "/workspace". */
  readonly workdir: string;
  readonly description: SandboxDescription;
  /** Copy isolation's changes; undefined when the workspace is mounted (bind). */
  readonly copy: CopiedWorkspace | undefined;
  /** Allowlist mode's gateway; undefined when the sandbox has no network or all of it. */
  readonly egress: EgressMonitor | undefined;
  /** Published ports (`--publish`); undefined when none were asked for. */
  readonly published?: PublishMonitor | undefined;
  /** Runs one shell command. The working directory persists between calls, like a shell's. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Releases host resources. Leaves a reusable container running unless it was created to be removed. */
  stop(): Promise<void>;
}
