/**
 * Files of the sandbox read and written by commands in the container, as the sandbox user, never by
 * harness on the host: what they can reach is what a `bash` call could (protected paths stay
 * read-only, the container's mounts bound the rest), and no link is ever followed on the host.
 * `write_file` and the editor write through `writeSandboxFile`; the editor reads through
 * `inspectSandboxFile`, which also says where the path leads, so that a link in the workspace that
 * leads out of it is refused rather than followed.
 */
import { posix } from "node:path";
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox/sandbox.js";
import { shellQuote } from "./shell-quote.js";
import type { ToolContext } from "./tool.js";

/** Base64 characters per command: a multiple of 4, well under the 128 KiB argument cap. */
const PIECE_CHARS = 64 * 1024;

/** How the file commands run. */
export interface SandboxFileOptions {
  /** Per-command timeout, in milliseconds. */
  timeoutMs: number;
}

function execOptions(options: SandboxFileOptions, context: ToolContext): ExecOptions {
  const exec: ExecOptions = { timeoutMs: options.timeoutMs };
  if (context.signal !== undefined) exec.signal = context.signal;
  if (context.callId !== undefined) exec.callId = context.callId;
  return exec;
}

/**
 * Writes `content` as the whole file at `path` (an absolute sandbox path), its parent directories
 * made. The content travels base64-encoded on the command line, in pieces that fit one argument
 * (Linux caps one at 128 KiB), appended in turn. Returns the last command's result; a failed piece
 * stops the write and is returned.
 */
export async function writeSandboxFile(
  sandbox: Sandbox,
  path: string,
  content: string,
  options: SandboxFileOptions,
  context: ToolContext,
): Promise<ExecResult | undefined> {
  const file = shellQuote(path);
  const encoded = Buffer.from(content).toString("base64");
  const pieces: string[] = [];
  for (let at = 0; at < encoded.length; at += PIECE_CHARS) pieces.push(encoded.slice(at, at + PIECE_CHARS));
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  const commands = [
    `mkdir -p -- ${shellQuote(dir)} && printf '%s' '${pieces[0] ?? ""}' | base64 -d > ${file}`,
    ...pieces.slice(1).map((piece) => `printf '%s' '${piece}' | base64 -d >> ${file}`),
  ];
  let result: ExecResult | undefined;
  for (const command of commands) {
    result = await sandbox.exec(command, execOptions(options, context));
    if (result.failed) return result;
  }
  return result;
}

/** What a path of the sandbox is, and a regular file's content. */
export interface SandboxFile {
  /** "file" (regular), "directory", "missing" (nothing there, or a dangling link), "other" (fifo, device…). */
  kind: "file" | "directory" | "missing" | "other";
  /** A file's size in bytes. */
  size: number;
  /** Where the path leads once every link in it is followed ("" when the container could not say). */
  realPath: string;
  /** A regular file's bytes, at most `maxBytes` + 1 of them (more than `maxBytes`: too big). */
  content?: Buffer;
  /** The command's result (a failure: the container could not even say what the path is). */
  exec: ExecResult;
}

/**
 * One command: what `path` is, where it leads, and (a regular file) its content, read whole through
 * the output stream (the result's own copy is cut; the stream is not) but never more than
 * `maxBytes` + 1 bytes.
 */
export async function inspectSandboxFile(
  sandbox: Sandbox,
  path: string,
  maxBytes: number,
  options: SandboxFileOptions,
  context: ToolContext,
): Promise<SandboxFile> {
  const command =
    `f=${shellQuote(path)}; t=$(stat -L -c '%F %s' -- "$f" 2>/dev/null) || t=missing; ` +
    `r=$(realpath -m -- "$f" 2>/dev/null || readlink -f -- "$f" 2>/dev/null); printf '%s\\n%s\\n' "$t" "$r"; ` +
    `case "$t" in 'regular file '*|'regular empty file '*) head -c ${maxBytes + 1} -- "$f";; esac`;
  const chunks: Buffer[] = [];
  let bytes = 0;
  const exec = await sandbox.exec(command, {
    ...execOptions(options, context),
    onOutput: (stream, chunk) => {
      if (stream !== "stdout" || bytes > maxBytes + 4096) return;
      chunks.push(chunk);
      bytes += chunk.length;
    },
  });
  const out = Buffer.concat(chunks);
  const first = out.indexOf(0x0a);
  const second = first < 0 ? -1 : out.indexOf(0x0a, first + 1);
  const type = out.subarray(0, Math.max(0, first)).toString();
  const realPath = second < 0 ? "" : out.subarray(first + 1, second).toString();
  const size = Number(/ (\d+)$/.exec(type)?.[1] ?? 0);
  const kind = /^regular (empty )?file /.test(type)
    ? "file"
    : type.startsWith("directory ")
      ? "directory"
      : type === "missing" || type === ""
        ? "missing"
        : "other";
  const file: SandboxFile = { kind, size, realPath, exec };
  if (kind === "file" && second >= 0) file.content = out.subarray(second + 1);
  return file;
}

/**
 * Why the editor must not follow `path`: it names a place in the workspace (`workdir`) but a link in
 * it leads out (to `realPath`). Undefined when it may.
 */
export function leadsOutOfWorkspace(workdir: string, path: string, realPath: string): string | undefined {
  const inside = (p: string) => p === workdir || p.startsWith(`${workdir}/`);
  if (realPath === "" || !inside(posix.normalize(path)) || inside(realPath)) return undefined;
  return `${path} leads out of the workspace (to ${realPath}) through a link; it is not followed`;
}
