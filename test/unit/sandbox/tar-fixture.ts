/** Hand-built tar archives for the strict extractor's tests, including hostile ones. */
import { Readable } from "node:stream";
import { type Header, pack } from "tar-stream";

export type FixtureEntry = Partial<Header> & { name: string; content?: string };

export function tarOf(entries: FixtureEntry[]): Readable {
  const p = pack();
  for (const { content, ...header } of entries) {
    if (content !== undefined) p.entry(header, content);
    else p.entry(header);
  }
  p.finalize();
  return Readable.from(p);
}
