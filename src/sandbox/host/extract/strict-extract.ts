/**
 * Writes an untrusted tar stream into a host directory, doing by hand the checks node-tar does (a
 * tar-stream extractor has none): see strict-paths.ts for the path rules. Hard links, devices and
 * fifos are refused, setuid/setgid/sticky bits stripped, sizes bounded, files written to a temp
 * file in the same directory (O_EXCL | O_NOFOLLOW) and renamed into place. A refused entry is
 * reported by name and reason and never stops the others; nothing outside `root` is touched. An
 * archive with more entries than `maxEntries` stops the extraction (what was written stays).
 */
import type { Readable } from "node:stream";
import { extract as tarExtract } from "tar-stream";
import { SandboxError } from "../../../errors.js";
import type { TreeEntry } from "../../copy/tree-diff.js";
import { SANDBOX_DEFAULTS } from "../../sandbox-request.js";
import { withBeneath } from "../paths/beneath.js";
import { safeComponents } from "../paths/strict-paths.js";
import { resolveLinksAgain } from "./recheck-written-links.js";
import type { ExtractResult, ExtractState, StrictExtractOptions } from "./strict-extract-types.js";
import { type TarEntry, writeEntry } from "./write-extract-entry.js";

export type { Refusal } from "../paths/strict-paths.js";
export type { ExtractResult, StrictExtractOptions } from "./strict-extract-types.js";

export async function strictExtract(source: Readable, options: StrictExtractOptions): Promise<ExtractResult> {
  try {
    return await withBeneath(options.root, (beneath) => extractBeneath(source, options, beneath));
  } finally {
    // However it ended (an error mid-archive too), the engine's archive stream is let go of: left
    // open and paused, it keeps the container busy, and removing the container then hangs.
    source.destroy();
  }
}

async function extractBeneath(
  source: Readable,
  options: StrictExtractOptions,
  beneath: ExtractState["beneath"],
): Promise<ExtractResult> {
  const state: ExtractState = { beneath, total: 0, links: [] };
  const { result } = await readEntries(source, options, state, writeEntry);
  if (state.links.length > 0)
    await resolveLinksAgain(beneath, state.links, options.recheckLinks ?? [], result);
  return result;
}

/** What is done with one entry that passed the name checks: a reason it is refused, or undefined. */
export type EntryHandler = (
  entry: TarEntry,
  parts: string[],
  wanted: TreeEntry | undefined,
  refusedPaths: string[],
  state: ExtractState,
  options: StrictExtractOptions,
  result: ExtractResult,
) => Promise<string | undefined>;

/**
 * Reads the archive entry by entry with every check on names, counts and what was reviewed, and hands
 * each entry to be written (or staged) to `handle`. Returns the results and the paths refused so far.
 */
export async function readEntries(
  source: Readable,
  options: StrictExtractOptions,
  state: ExtractState,
  handle: EntryHandler,
): Promise<{ result: ExtractResult; refusedPaths: string[] }> {
  const result: ExtractResult = { written: [], refused: [], notes: [] };
  const refusedPaths: string[] = [];
  const seen = new Set<string>();
  const extract = tarExtract();
  source.on("error", (error) => extract.destroy(error));
  source.pipe(extract);
  let prefix = options.stripPrefix ?? "";
  let first = true;
  const maxEntries = options.maxEntries ?? SANDBOX_DEFAULTS.copyMaxFiles;
  let entries = 0;
  for await (const entry of extract) {
    const name = entry.header.name;
    // Podman 4.3 names a stopped container's volume "/" (then "/a.txt", ...), not "workspace/":
    // the first entry says which naming the whole archive uses (as in copy/sandbox-tree.ts).
    if (first && name === "/" && entry.header.type === "directory" && prefix !== "") prefix = "/";
    first = false;
    // Refusals are kept per entry: the count bounds them (and the time spent) too.
    if (name !== prefix && `${name}/` !== prefix && ++entries > maxEntries) {
      throw new SandboxError(
        `the sandbox's archive holds more than ${maxEntries} files, directories and symlinks, over --copy-max-files; extraction stopped`,
      );
    }
    const refuse = (reason: string, path = name) => {
      result.refused.push({ path, reason });
      refusedPaths.push(path);
    };
    if (!`${name}/`.startsWith(prefix)) refuse(`outside ${prefix || "the archive root"}`);
    else {
      const parts = safeComponents(name.slice(prefix.length));
      if (!Array.isArray(parts)) refuse(parts.reason);
      else if (parts.length > 0) {
        const path = parts.join("/");
        const wanted = options.expected?.get(path);
        if (wanted) seen.add(path);
        if (!options.expected || wanted) {
          const refused = await handle(entry, parts, wanted, refusedPaths, state, options, result);
          if (refused) refuse(refused, path);
        }
      }
    }
    // Whatever was not written is read to its end: the next header follows it in the stream.
    await drain(entry);
  }
  for (const path of options.expected?.keys() ?? []) {
    if (!seen.has(path)) result.refused.push({ path, reason: "missing from the sandbox's archive" });
  }
  return { result, refusedPaths };
}

async function drain(entry: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of entry) {
    // discard
  }
}
