import { closeSync } from "node:fs";

/** Closes `fd`, ignoring errors: used where the descriptor is given up anyway. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed or failed; nothing more to do with it.
  }
}
