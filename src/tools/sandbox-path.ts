/**
 * A path the caller names for a file tool, as the sandbox will see it: relative paths are taken from
 * the workspace root (not the shell's current directory, which moves with `cd`), so the same call
 * names the same file whatever ran before. The path is used inside the container only: a link in it
 * is followed there, where the sandbox's own mounts bound what it reaches, never on the host.
 */
import { ToolError } from "./tool.js";

export function sandboxPath(workdir: string, input: unknown): string {
  if (typeof input !== "string" || input.trim() === "") {
    throw new ToolError("Error: `path` must be a non-empty string.");
  }
  if (input.includes("\0")) throw new ToolError("Error: `path` must not contain NUL characters.");
  return input.startsWith("/") ? input : `${workdir}/${input}`;
}
