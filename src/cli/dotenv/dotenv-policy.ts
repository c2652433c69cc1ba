/**
 * Which keys of a `.env` harness loads, decided without touching disk or `process.env` (the facts
 * come from dotenv-load.ts). The answer is the keys to set and one stderr line per thing to say.
 */
import { isGuardedKey, wideningFlag } from "./dotenv-keys.js";

/** Why a `.env` may have been written by a sandbox. */
export type Doubt =
  /** Its content is one a run recorded as written by the sandbox (or by copy mode's apply). */
  | { kind: "sandbox-wrote" }
  /** It last changed while a bind-mode sandbox of this directory (`workspace`) could write it. */
  | { kind: "changed-under-sandbox"; workspace: string };

/** What dotenv-load.ts found out about `./.env`. */
export type DotenvFacts =
  | { kind: "absent" }
  /** A symbolic link, or not a regular file: never followed, never read. */
  | { kind: "not-a-file"; what: string }
  | {
      kind: "file";
      /** Its parsed content (dotenv.parse). */
      parsed: Record<string, string>;
      /** Set when a sandbox may have written it and the user has not trusted this content. */
      doubt: Doubt | undefined;
      /** True when the content differs from what harness loaded from this path the last time. */
      changed: boolean;
      /** True when harness never loaded a `.env` from this path before. */
      firstSeen: boolean;
    };

export interface DotenvDecision {
  /** Keys to set (where the real environment does not already). */
  load: Record<string, string>;
  /** One line each, for stderr. */
  lines: string[];
}

/** What to load from the `.env` at `path`, given what is known of it. */
export function decideDotenv(path: string, facts: DotenvFacts): DotenvDecision {
  if (facts.kind === "absent") return { load: {}, lines: [] };
  if (facts.kind === "not-a-file") {
    return {
      load: {},
      lines: [`harness: not loading ${path}: it is ${facts.what}, which harness never follows or reads`],
    };
  }
  const load: Record<string, string> = {};
  const lines: string[] = [];
  const refused: string[] = [];
  for (const [key, value] of Object.entries(facts.parsed)) {
    const flag = wideningFlag(key, value);
    if (flag !== undefined) {
      lines.push(
        `harness: ignoring ${key}=${shown(value)} from ${path}: a .env cannot widen the sandbox (pass ${flag} or export ${key})`,
      );
    } else if (facts.doubt !== undefined && isGuardedKey(key)) {
      refused.push(key);
    } else {
      load[key] = value;
    }
  }
  if (refused.length > 0 && facts.doubt !== undefined) {
    lines.unshift(
      `harness: not loading ${refused.join(", ")} from ${path}: ${because(facts.doubt)}; read it, then run 'harness trust-env ${path}' to load it again`,
    );
  }
  // A doubtful file already got its line; saying it is new as well would be noise.
  if (facts.changed && facts.doubt === undefined) {
    const guarded = Object.keys(load).filter(isGuardedKey);
    const what = facts.firstSeen ? "is new to harness" : "changed since harness last loaded it";
    lines.push(
      `harness: ${path} ${what}; ${guarded.length > 0 ? `it sets ${guarded.join(", ")}` : "it sets no guarded key"}`,
    );
  }
  return { load, lines };
}

function because(doubt: Doubt): string {
  return doubt.kind === "sandbox-wrote"
    ? "a sandbox wrote it"
    : `it changed while a sandbox could write ${doubt.workspace}`;
}

/** A value on one line, short, with controls escaped: it may come from the sandbox. */
function shown(value: string): string {
  const text = JSON.stringify(value).slice(1, -1);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
