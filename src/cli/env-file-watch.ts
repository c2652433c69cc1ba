/**
 * harness loads `.env` from the current directory, which is often the workspace the sandbox can
 * write. An existing `.env` is mounted read-only, but the task can still create one where there was
 * none, and the next run would load it (a different ANTHROPIC_BASE_URL would send the key elsewhere).
 * This notices that and says so at the end of the run.
 */
import { lstatSync } from "node:fs";
import { relative, resolve } from "node:path";

function fingerprint(path: string): string {
  try {
    const s = lstatSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.mode}`;
  } catch {
    return "absent";
  }
}

/**
 * Call before the run; the returned function, after it, gives a warning line when the `.env` harness
 * would load next time changed meanwhile, or undefined. Only a `.env` inside the workspace is watched.
 */
export function watchEnvFile(workspace: string, cwd: string = process.cwd()): () => string | undefined {
  const path = resolve(cwd, ".env");
  const inside = relative(workspace, path);
  if (inside.startsWith("..") || inside === path) return () => undefined;
  const before = fingerprint(path);
  return () => {
    const after = fingerprint(path);
    if (after === before) return undefined;
    const what = before === "absent" ? "created" : after === "absent" ? "removed" : "changed";
    return `warning: ${path} was ${what} during the run; harness loads its settings (API key, ANTHROPIC_BASE_URL) from it: read it before running harness here again`;
  };
}
