/**
 * What the peer bench makes on the engine, recorded by id at the moment the engine answers each
 * create, and removed by those ids only. The engine is shared: a container that nobody recorded
 * (another user's, even unlabelled and on harness's image, even made while the bench ran) is never
 * touched (issue 35; the bench used to remove every such container).
 *
 * A record is a directory of empty files named `<kind>.<id>`, written by whichever client made the
 * call (harness-driver.ts, record.py for docker-py, the bench itself for its network), plus `*.cid`
 * files that the docker CLI writes at create (`docker run --cidfile`). A run's root directory holds one
 * such directory per driver, and an `owner` file (pid and start time of the bench): a run killed
 * outright leaves its record, and the next run removes what it names once that owner is gone.
 */
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type CreatedKind = "container" | "volume" | "network";

export interface Created {
  kind: CreatedKind;
  /** The full id (containers, networks) or the name (volumes) the engine answered with. */
  id: string;
}

const KINDS: readonly CreatedKind[] = ["container", "volume", "network"];
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export function recordCreated(dir: string, kind: CreatedKind, id: string): void {
  if (!ID.test(id)) throw new Error(`not an engine id: ${JSON.stringify(id)}`);
  writeFileSync(join(dir, `${kind}.${id}`), "");
}

/** Everything recorded in `dir` and the directories right below it. */
export function readRecord(dir: string): Created[] {
  const found: Created[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      found.push(...readRecord(path));
      continue;
    }
    if (name.endsWith(".cid")) {
      // Empty while the CLI's create is under way or when it failed.
      const id = readFileSync(path, "utf8").trim();
      if (ID.test(id)) found.push({ kind: "container", id });
      continue;
    }
    const dot = name.indexOf(".");
    const kind = name.slice(0, dot) as CreatedKind;
    const id = name.slice(dot + 1);
    if (dot > 0 && KINDS.includes(kind) && ID.test(id)) found.push({ kind, id });
  }
  return found;
}

/** The engine calls the cleanup makes: by id only, never a listing. dockerode's client fits. */
export interface CleanupEngine {
  getContainer(id: string): { remove(options: { force: boolean; v: boolean }): Promise<unknown> };
  getVolume(name: string): { remove(): Promise<unknown> };
  getNetwork(id: string): { remove(): Promise<unknown> };
}

export interface Cleanup {
  removed: Created[];
  /** Already gone (the peer removed it itself). */
  gone: Created[];
  failed: Array<Created & { error: string }>;
}

const statusOf = (error: unknown): number | undefined => (error as { statusCode?: number }).statusCode;

function removeOne(engine: CleanupEngine, item: Created): Promise<unknown> {
  if (item.kind === "container") return engine.getContainer(item.id).remove({ force: true, v: true });
  if (item.kind === "volume") return engine.getVolume(item.id).remove();
  return engine.getNetwork(item.id).remove();
}

/**
 * Removes what was recorded: containers first (a network or volume in use cannot go), each once. A
 * conflict (409: its maker is removing it right now, or a container being removed still uses the
 * volume) is asked again, `attempts` times, `retryMs` apart.
 */
export async function removeRecorded(
  engine: CleanupEngine,
  created: readonly Created[],
  { attempts = 20, retryMs = 500 } = {},
): Promise<Cleanup> {
  const result: Cleanup = { removed: [], gone: [], failed: [] };
  const seen = new Set<string>();
  for (const kind of KINDS) {
    for (const item of created) {
      if (item.kind !== kind || seen.has(`${kind}.${item.id}`)) continue;
      seen.add(`${kind}.${item.id}`);
      for (let attempt = 1; ; attempt++) {
        try {
          await removeOne(engine, item);
          result.removed.push(item);
        } catch (error) {
          if (statusOf(error) === 409 && attempt < attempts) {
            await new Promise((resolve) => setTimeout(resolve, retryMs));
            continue;
          }
          if (statusOf(error) === 404) result.gone.push(item);
          else result.failed.push({ ...item, error: (error as Error).message });
        }
        break;
      }
    }
  }
  return result;
}

/** The start time of a process (clock ticks since boot, /proc/PID/stat field 22), or undefined. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Marks `root` as this process's record (see the header). */
export function claimRecord(root: string): void {
  writeFileSync(join(root, "owner"), `${process.pid} ${processStart(process.pid) ?? "?"}\n`);
}

/** A record whose owner (the pid with the start time it wrote) no longer runs. */
export function abandoned(root: string): boolean {
  let owner: string;
  try {
    owner = readFileSync(join(root, "owner"), "utf8").trim();
  } catch {
    return false; // being made right now, or not a record: leave it
  }
  const [pid, start] = owner.split(" ");
  return processStart(Number(pid)) !== start;
}

/**
 * Removes what abandoned records in `parent` name (directories starting with `prefix`), then the
 * records. A record whose owner still runs is another bench's, running now: never touched.
 */
export async function recoverAbandoned(
  engine: CleanupEngine,
  parent: string,
  prefix: string,
): Promise<Cleanup[]> {
  const done: Cleanup[] = [];
  for (const name of readdirSync(parent)) {
    const root = join(parent, name);
    if (!name.startsWith(prefix) || !abandoned(root)) continue;
    const cleanup = await removeRecorded(engine, readRecord(root));
    done.push(cleanup);
    if (cleanup.failed.length === 0) rmSync(root, { recursive: true, force: true });
  }
  return done;
}
