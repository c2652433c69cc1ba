/**
 * The import rule between rooms (part of `npm run check`): a room is a folder below src/ holding
 * code (src/sandbox/docker/exec, src/runs…); a file belongs to the deepest room that holds it. No two
 * rooms may import each other at run time (type-only imports are erased), directly or round a loop,
 * and no room of the sandbox may hold more than MAX_LOOSE loose files. src/ itself is not a room: the CLI on top
 * (cli.ts, config.ts) and the few facts everything shares (errors.ts, version.ts) live there. Biome's noRestrictedImports keeps the layers' direction (cli → agent → tools →
 * sandbox); this keeps the rooms within a layer from growing into one another.
 *
 * Prints every loop (the rooms and one import that makes each step) and exits 1 when there is one.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src");
/** Loose files (code, programs) a room may hold before it needs rooms of its own. */
const MAX_LOOSE = 12;
const CODE = /\.(ts|py|sh)$/;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** The room of a file: its folder, relative to src/ ("." for src/ itself). */
const roomOf = (file: string) => relative(SRC, dirname(file)) || ".";

/** Value imports and re-exports by relative path; `import type` is erased and makes no edge. */
const IMPORT = /(?:^|\n)\s*(?:import|export)\s(?!type\s)[^;]*?from\s+["'](\.{1,2}\/[^"']+)["']/g;

export interface RoomGraph {
  /** room → room → one import that makes the edge ("file → target"). */
  edges: Map<string, Map<string, string>>;
  loose: Map<string, number>;
}

export function roomGraph(sources: readonly string[]): RoomGraph {
  const edges = new Map<string, Map<string, string>>();
  const loose = new Map<string, number>();
  for (const file of sources) {
    const from = roomOf(file);
    if (CODE.test(file)) loose.set(from, (loose.get(from) ?? 0) + 1);
    if (!file.endsWith(".ts")) continue;
    for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const target = resolve(dirname(file), match[1] ?? "");
      const to = roomOf(target);
      if (to === from || to === "." || from === "." || to.startsWith("..")) continue;
      const out = edges.get(from) ?? new Map<string, string>();
      if (!out.has(to)) out.set(to, `${relative(ROOT, file)} → ${match[1]}`);
      edges.set(from, out);
    }
  }
  return { edges, loose };
}

/** Every elementary loop, each once (from its smallest room), by depth-first search. */
export function loops(edges: RoomGraph["edges"]): string[][] {
  const found: string[][] = [];
  const rooms = [...edges.keys()].sort();
  for (const start of rooms) {
    const walk = (room: string, path: string[]) => {
      for (const next of edges.get(room)?.keys() ?? []) {
        if (next === start) found.push([...path]);
        else if (next > start && !path.includes(next)) walk(next, [...path, next]);
      }
    };
    walk(start, [start]);
  }
  return found;
}

function main(): number {
  const { edges, loose } = roomGraph(files(SRC));
  let failed = false;
  for (const loop of loops(edges)) {
    failed = true;
    const steps = loop.map((room, i) => {
      const next = loop[(i + 1) % loop.length] ?? room;
      return `  ${room} → ${next}: ${edges.get(room)?.get(next)}`;
    });
    console.error(`check-rooms: an import loop between rooms:\n${steps.join("\n")}`);
  }
  for (const [room, count] of loose) {
    if (room.startsWith("sandbox") && count > MAX_LOOSE) {
      failed = true;
      console.error(
        `check-rooms: src/${room} holds ${count} loose files (at most ${MAX_LOOSE}): give it rooms`,
      );
    }
  }
  if (!failed) console.log(`check-rooms: ${edges.size} rooms import one another without a loop`);
  return failed ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main();
