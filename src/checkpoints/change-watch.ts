/**
 * Bind mode's shortcut for a step that changed nothing: every directory of the workspace is watched
 * with inotify (fs.watch, one watch per directory, added through the descriptor the walk opened it
 * with, so never through a symlink), and a step after which no watch reported anything since the
 * last walk skips the walk. Any event, on any directory, means a whole walk; the walk is the truth,
 * the watch only says when it can be spared.
 *
 * Why it is safe to skip: the kernel queues an event in the same system call that changes a name or
 * content, so by the time the command's exit has reached harness (through the engine's socket, then
 * an inspect round trip) the events are queued, and a pass through the event loop's poll phase that
 * starts after that (`quiet` waits for one) delivers them. A queue that overflowed still delivered the events before
 * the overflow, so "nothing at all" cannot come from lost events. What inotify never reports (a
 * write through a shared mapping, a hard-linked file changed through a name outside the workspace)
 * is caught by the walk that comes at least every `maxQuietSteps` steps.
 *
 * Off (always walk) when a watch cannot be added (the kernel's watch limit) or errs, or past
 * `maxDirectories`.
 */
import { type FSWatcher, watch } from "node:fs";

export interface ChangeWatchOptions {
  /** Steps in a row that may skip the walk; the next one walks. Default 10. */
  maxQuietSteps?: number;
  /** More directories than this: no watching. Default 10,000. */
  maxDirectories?: number;
}

export class ChangeWatch {
  private readonly watchers = new Map<string, { ino: number; watcher: FSWatcher }>();
  private seen = new Set<string>();
  private changed = true;
  private off: string | undefined;
  private quietSteps = 0;
  private readonly maxQuietSteps: number;
  private readonly maxDirectories: number;

  constructor(options: ChangeWatchOptions = {}) {
    this.maxQuietSteps = options.maxQuietSteps ?? 10;
    this.maxDirectories = options.maxDirectories ?? 10_000;
  }

  /** True when this step may skip the walk. Waits for one whole pass through the poll phase first. */
  async quiet(): Promise<boolean> {
    // The first immediate runs in this or the next check phase; the second only after the poll phase
    // that follows it, which reads every event queued before this call.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    if (this.off !== undefined || this.changed || this.watchers.size === 0) return false;
    if (this.quietSteps >= this.maxQuietSteps) return false;
    this.quietSteps += 1;
    return true;
  }

  /** Why watching is off, if it is. */
  get disabled(): string | undefined {
    return this.off;
  }

  /** A walk begins: events from now on count for the next step. */
  beginWalk(): void {
    this.changed = false;
    this.quietSteps = 0;
    this.seen = new Set();
  }

  /** The walk opened directory `rel` (inode `ino`) at `path` (its descriptor's /proc path). */
  directory(rel: string, ino: number, path: string): void {
    if (this.off !== undefined) return;
    this.seen.add(rel);
    const held = this.watchers.get(rel);
    if (held?.ino === ino) return;
    held?.watcher.close();
    if (this.watchers.size >= this.maxDirectories) {
      this.stop(`more than ${this.maxDirectories} directories`);
      return;
    }
    try {
      const watcher = watch(path, { persistent: false }, () => {
        this.changed = true;
      });
      watcher.on("error", () => this.stop("a watch failed"));
      this.watchers.set(rel, { ino, watcher });
    } catch (error) {
      this.stop(`a directory could not be watched (${(error as NodeJS.ErrnoException).code})`);
    }
  }

  /** The walk is over: directories it did not open are gone (or left out); their watches go. */
  endWalk(complete: boolean): void {
    if (!complete) {
      // A walk that gave up saw only part of the tree: the next step walks again.
      this.changed = true;
      return;
    }
    for (const [rel, held] of this.watchers) {
      if (this.seen.has(rel)) continue;
      held.watcher.close();
      this.watchers.delete(rel);
    }
  }

  close(): void {
    for (const held of this.watchers.values()) held.watcher.close();
    this.watchers.clear();
  }

  private stop(reason: string): void {
    this.off ??= reason;
    this.close();
  }
}
