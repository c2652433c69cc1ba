/**
 * What the Models API said about each model, kept in `<state>/models.json` so a model is asked about
 * once (per endpoint) and not before every run. Only a cache: missing, damaged or not writable, the
 * API is asked again. An endpoint that does not answer the Models API is remembered for a day, an
 * answer for a week (capabilities change with releases, rarely). Written whole and renamed into place,
 * through the directory held open, never through a link.
 */
import { readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { openHostFile } from "../host-files/host-file.js";
import { type HostDir, openHostDir } from "../host-files/host-path.js";
import type { ModelProfile } from "../model/model-profile.js";
import { harnessStateDir } from "./state-dir.js";

const VERSION = 1;
const FILE = "models.json";
const ANSWER_TTL_MS = 7 * 24 * 3600 * 1000;
const NO_ANSWER_TTL_MS = 24 * 3600 * 1000;

interface Entry {
  /** When it was asked, ms since the epoch. */
  at: number;
  /** The answer; null: the endpoint does not answer the Models API. */
  profile: ModelProfile | null;
}

/** What `lookupModel` (model/model-catalog.ts) keeps between runs. */
export interface ModelCache {
  /** The kept answer (null: the endpoint had none), or undefined when there is none or it is too old. */
  get(endpoint: string, model: string): ModelProfile | null | undefined;
  /** Keeps an answer. Never throws. */
  set(endpoint: string, model: string, profile: ModelProfile | null): void;
}

export function modelCache(env: NodeJS.ProcessEnv = process.env, now: () => number = Date.now): ModelCache {
  const dir = harnessStateDir(env);
  const key = (endpoint: string, model: string) => `${endpoint} ${model}`;
  return {
    get(endpoint, model) {
      const entry = read(join(dir, FILE))[key(endpoint, model)];
      if (entry === undefined) return undefined;
      const ttl = entry.profile === null ? NO_ANSWER_TTL_MS : ANSWER_TTL_MS;
      const age = now() - entry.at;
      return age >= 0 && age < ttl ? entry.profile : undefined;
    },
    set(endpoint, model, profile) {
      const entries = read(join(dir, FILE));
      entries[key(endpoint, model)] = { at: now(), profile };
      write(dir, entries);
    },
  };
}

function read(path: string): Record<string, Entry> {
  try {
    const data = JSON.parse(readFileSync(path, "utf8")) as { version?: unknown; entries?: unknown };
    if (data.version !== VERSION || typeof data.entries !== "object" || data.entries === null) return {};
    return Object.fromEntries(
      Object.entries(data.entries as Record<string, Entry>).filter(([, entry]) => isEntry(entry)),
    );
  } catch {
    return {};
  }
}

function write(stateDir: string, entries: Record<string, Entry>): void {
  let dir: HostDir | undefined;
  const temporary = `${FILE}.${process.pid}.tmp`;
  try {
    dir = openHostDir(stateDir, 0o700);
    rmSync(dir.at(temporary), { force: true });
    const file = openHostFile(dir, temporary, { mode: 0o600, exclusive: true });
    try {
      file.write(JSON.stringify({ version: VERSION, entries }));
    } finally {
      file.close();
    }
    renameSync(dir.at(temporary), dir.at(FILE));
  } catch {
    // A read-only or full state directory: the API is asked again next time.
    try {
      if (dir !== undefined) rmSync(dir.at(temporary), { force: true });
    } catch {
      // Nothing to clean up.
    }
  } finally {
    dir?.close();
  }
}

function isEntry(value: unknown): value is Entry {
  const entry = value as Partial<Entry> | null;
  if (typeof entry !== "object" || entry === null || typeof entry.at !== "number") return false;
  const profile = entry.profile;
  return (
    profile === null ||
    (typeof profile === "object" &&
      profile !== undefined &&
      typeof profile.id === "string" &&
      typeof profile.contextWindow === "number" &&
      profile.contextWindow > 0)
  );
}
