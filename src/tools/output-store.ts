/**
 * Keeps the whole output of commands whose output was cut for the model, as files on the host beside
 * the transcript, so the model can page through a long test log with `read_output` instead of
 * flooding its context. Bounded per stream and per run; nothing is written for short output.
 */

import { lstatSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { type HostFile, openHostFile } from "../host-files/host-file.js";
import { type HostDir, HostPathError, openHostDir } from "../host-files/host-path.js";
import { SANDBOX_DEFAULTS } from "../sandbox/sandbox-request.js";

export type StreamName = "stdout" | "stderr";

export interface SavedOutput {
  /** Short id the model uses with `read_output`, e.g. "out-3". */
  id: string;
  stream: StreamName;
  /** Host path of the file (for messages). */
  path: string;
  /** Where to read it: through the directory harness holds open, whatever is at `path` now. */
  readPath: string;
  /** Bytes in the file. */
  savedBytes: number;
  /** Bytes the command wrote to this stream (more than saved when a bound was hit). */
  totalBytes: number;
}

export interface OutputStoreOptions {
  /** Directory for the files (created on first use). */
  dir: string;
  /** Output up to this size per stream stays in memory only. Default: what the sandbox keeps of a stream. */
  spillAfterBytes?: number;
  /** Most bytes saved per stream of one command. Default 64 MiB. */
  maxBytesPerStream?: number;
  /** Most bytes saved over the whole run. Default 512 MiB. */
  maxBytesPerRun?: number;
  /**
   * A continued run (`run --continue`): the outputs already in `dir`, saved by the earlier runs of the
   * same conversation, stay readable by their ids, and new ids follow the highest of them.
   */
  adoptExisting?: boolean;
  /**
   * Ids up to `out-<usedIds>` are taken (a continued conversation names them, even where their files
   * were pruned since): new ids start above, so `read_output` never finds another output under an id
   * the model already knows.
   */
  usedIds?: number;
  /**
   * Told once when harness refuses to save in the directory or a file in it (a symlink, a file
   * swapped in: host-file.ts); such outputs are not kept.
   */
  onRefused?: (error: HostPathError) => void;
}

interface StreamState {
  /** Saving failed (cannot open or write): nothing more is kept in memory or on disk. */
  failed: boolean;
  pending: Buffer[];
  pendingBytes: number;
  file: HostFile | undefined;
  savedBytes: number;
  totalBytes: number;
}

export class OutputStore {
  private readonly saved = new Map<string, SavedOutput>();
  private runBytes = 0;
  private count = 0;
  /** The directory, held open from its first use; "refused" once it could not be. */
  private dir: HostDir | "refused" | undefined;

  constructor(private readonly options: OutputStoreOptions) {
    this.count = Math.max(0, options.usedIds ?? 0);
    if (options.adoptExisting) this.adopt();
  }

  /**
   * Registers `out-N.stdout` / `out-N.stderr` files already in the directory. How many bytes their
   * command wrote is not known here: the earlier result told the model when a bound cut the file.
   */
  private adopt(): void {
    let dir: HostDir;
    let names: string[];
    try {
      dir = this.openDir(false);
      names = dir.list();
    } catch {
      return; // No earlier outputs (or unreadable, or refused: as good as none).
    }
    for (const name of names) {
      const match = /^(out-(\d+))\.(stdout|stderr)$/.exec(name);
      if (match === null) continue;
      const [, id = "", n = "", stream = "stdout"] = match;
      // Any name taken counts: "wx" could not create it again.
      this.count = Math.max(this.count, Number(n));
      try {
        const stats = lstatSync(dir.at(name));
        // Only harness's own regular files: never a link someone put there.
        if (!stats.isFile()) continue;
        this.record({
          id,
          stream: stream as StreamName,
          path: join(this.options.dir, name),
          readPath: dir.at(name),
          savedBytes: stats.size,
          totalBytes: stats.size,
        });
      } catch {
        // Removed meanwhile: nothing to read.
      }
    }
  }

  /** The directory, opened (and with `create`, made) once and held; throws when refused. */
  private openDir(create: boolean): HostDir {
    if (this.dir === "refused") throw new HostPathError(this.options.dir, "refused before");
    if (this.dir === undefined) {
      try {
        this.dir = openHostDir(this.options.dir, create ? 0o700 : undefined);
      } catch (error) {
        if (error instanceof HostPathError && !error.missing) {
          this.dir = "refused";
          this.options.onRefused?.(error);
        }
        throw error;
      }
    }
    return this.dir;
  }

  /** Closes the directory it holds: saved outputs are not readable afterwards. */
  close(): void {
    if (this.dir !== undefined && this.dir !== "refused") this.dir.close();
    this.dir = undefined;
  }

  /** Starts capturing one command's output. */
  begin(): OutputCapture {
    this.count += 1;
    return new OutputCapture(this, `out-${this.count}`);
  }

  /**
   * Saves `text` under a new id (as its stdout): a tool result cleared from the conversation to keep
   * it within the context window stays readable with read_output. Undefined when it could not be
   * saved (refused directory, full disk, the run's bound reached). Never throws.
   */
  saveText(text: string): SavedOutput | undefined {
    this.count += 1;
    const id = `out-${this.count}`;
    const bytes = Buffer.from(text);
    if (this.allowance(0) < bytes.length) return undefined;
    let file: HostFile;
    try {
      file = this.open(id, "stdout");
    } catch {
      return undefined;
    }
    try {
      file.write(bytes);
    } catch (error) {
      if (error instanceof HostPathError) this.report(error);
      file.close();
      this.remove(file);
      return undefined;
    }
    file.close();
    this.account(bytes.length);
    const output: SavedOutput = {
      id,
      stream: "stdout",
      path: file.path,
      readPath: file.openPath,
      savedBytes: bytes.length,
      totalBytes: bytes.length,
    };
    this.record(output);
    return output;
  }

  /** A saved stream by id, or undefined. The model can only name ids, never paths. */
  get(id: string, stream: StreamName): SavedOutput | undefined {
    return this.saved.get(`${id}/${stream}`);
  }

  /** @internal */
  open(id: string, stream: StreamName): HostFile {
    try {
      return openHostFile(this.openDir(true), `${id}.${stream}`, { mode: 0o600, exclusive: true });
    } catch (error) {
      if (error instanceof HostPathError && this.dir !== "refused") this.report(error);
      throw error;
    }
  }

  /** @internal */
  report(error: HostPathError): void {
    this.options.onRefused?.(error);
  }

  /** @internal Removes a file it saved (by name, in the directory it holds). */
  remove(file: HostFile): void {
    try {
      file.check();
      unlinkSync(file.openPath);
    } catch {
      // Gone or swapped: whatever is there now is not harness's to remove.
    }
  }

  /** @internal Bytes this stream may still write, given both bounds. */
  allowance(alreadySaved: number): number {
    const perStream = (this.options.maxBytesPerStream ?? 64 * 1024 ** 2) - alreadySaved;
    const perRun = (this.options.maxBytesPerRun ?? 512 * 1024 ** 2) - this.runBytes;
    return Math.max(0, Math.min(perStream, perRun));
  }

  /** @internal */
  account(bytes: number): void {
    this.runBytes += bytes;
  }

  /** @internal */
  record(output: SavedOutput): void {
    this.saved.set(`${output.id}/${output.stream}`, output);
  }

  get spillAfterBytes(): number {
    return (
      this.options.spillAfterBytes ?? SANDBOX_DEFAULTS.outputHeadBytes + SANDBOX_DEFAULTS.outputTailBytes
    );
  }
}

function newStreamState(): StreamState {
  return {
    failed: false,
    pending: [],
    pendingBytes: 0,
    file: undefined,
    savedBytes: 0,
    totalBytes: 0,
  };
}

export class OutputCapture {
  private readonly streams: Record<StreamName, StreamState> = {
    stdout: newStreamState(),
    stderr: newStreamState(),
  };

  constructor(
    private readonly store: OutputStore,
    readonly id: string,
  ) {}

  /**
   * Synchronous on purpose: a slow disk then slows reading from Docker instead of growing memory.
   * Never throws: a full or failing disk only means this output is not kept.
   */
  write(stream: StreamName, chunk: Buffer): void {
    const s = this.streams[stream];
    s.totalBytes += chunk.length;
    if (s.failed) return;
    if (s.file === undefined) {
      s.pending.push(chunk);
      s.pendingBytes += chunk.length;
      if (s.pendingBytes <= this.store.spillAfterBytes) return;
      try {
        s.file = this.store.open(this.id, stream);
      } catch {
        this.fail(s);
        return;
      }
      const buffered = Buffer.concat(s.pending);
      s.pending = [];
      this.append(s, buffered);
      return;
    }
    this.append(s, chunk);
  }

  private append(s: StreamState, chunk: Buffer): void {
    if (s.file === undefined) return;
    const room = this.store.allowance(s.savedBytes);
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part.length === 0) return;
    try {
      s.file.write(part);
    } catch (error) {
      if (error instanceof HostPathError) this.store.report(error);
      this.fail(s);
      return;
    }
    s.savedBytes += part.length;
    this.store.account(part.length);
  }

  /** Gives up on saving this stream: frees what is held and removes a partial file. */
  private fail(s: StreamState): void {
    s.failed = true;
    s.pending = [];
    s.pendingBytes = 0;
    if (s.file !== undefined) {
      s.file.close();
      this.store.remove(s.file);
      this.store.account(-s.savedBytes);
      s.file = undefined;
    }
  }

  /**
   * Ends the capture. With `keep`, files written are registered and returned; without, they are
   * deleted (the model saw everything already).
   */
  finish(keep: boolean): SavedOutput[] {
    const kept: SavedOutput[] = [];
    for (const stream of ["stdout", "stderr"] as const) {
      const s = this.streams[stream];
      if (s.file === undefined) continue;
      s.file.close();
      if (!keep) {
        this.store.remove(s.file);
        this.store.account(-s.savedBytes);
        continue;
      }
      const output = {
        id: this.id,
        stream,
        path: s.file.path,
        readPath: s.file.openPath,
        savedBytes: s.savedBytes,
        totalBytes: s.totalBytes,
      };
      this.store.record(output);
      kept.push(output);
    }
    return kept;
  }
}
