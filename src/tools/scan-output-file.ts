/**
 * Reads lines of a saved output file in a worker thread. The model's `grep` pattern runs there: a
 * pattern with catastrophic backtracking then costs a terminated worker after a deadline, instead
 * of freezing harness (and its Ctrl-C handling) on the main thread.
 */
import { Worker } from "node:worker_threads";

export interface ScanRequest {
  path: string;
  /** Regular expression source; undefined for a line range. */
  pattern: string | undefined;
  startLine: number;
  endLine: number;
  /** Most lines returned (matches, or lines of the range). */
  maxLines: number;
  /** Lines are cut to this many characters before matching and showing. */
  maxLineChars: number;
}

export interface ScanResult {
  /** "N: text" lines. */
  shown: string[];
  /** Lines in the file. */
  total: number;
}

// CommonJS, run with `eval: true`: no separate file to find next to the bundle.
const WORKER_SOURCE = `
const { parentPort, workerData: r } = require("node:worker_threads");
const { constants, createReadStream } = require("node:fs");
const { createInterface } = require("node:readline");
// Never through a link, nor blocked on a fifo, swapped in at the file's name.
const NO_LINK = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
(async () => {
  const re = r.pattern === undefined ? undefined : new RegExp(r.pattern);
  const shown = [];
  let n = 0;
  const lines = createInterface({ input: createReadStream(r.path, { flags: NO_LINK }), crlfDelay: Infinity });
  for await (const line of lines) {
    n += 1;
    const cut = line.length > r.maxLineChars;
    const text = cut ? line.slice(0, r.maxLineChars) : line;
    if (shown.length >= r.maxLines) continue;
    const wanted = re ? re.test(text) : n >= r.startLine && n <= r.endLine;
    if (wanted) shown.push(n + ": " + text + (cut ? "… [line cut]" : ""));
  }
  parentPort.postMessage({ shown, total: n });
})().catch((error) => parentPort.postMessage({ error: String(error && error.message || error) }));
`;

/** Resolves with the lines, or with "timeout" when the scan ran past `timeoutMs` (the worker is stopped). */
export function scanOutputFile(request: ScanRequest, timeoutMs: number): Promise<ScanResult | "timeout"> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: request });
    const timer = setTimeout(() => {
      void worker.terminate();
      resolve("timeout");
    }, timeoutMs);
    worker.once("message", (message: ScanResult | { error: string }) => {
      clearTimeout(timer);
      void worker.terminate();
      if ("error" in message) reject(new Error(message.error));
      else resolve(message);
    });
    worker.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
