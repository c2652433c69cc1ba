/** Longest marker line held back while waiting for its newline (the wrapper's are under 4.2 KB). */
const MAX_MARKER_BYTES = 8192;

/**
 * Finds the line the exec wrapper prints after the command finished, and passes every byte before it
 * on as output. This is how harness knows a command is done even while a background process it
 * started (`server &`) keeps the exec's pipes open: end-of-stream would come ~2 s later on Engine 20.10,
 * or never. The marker holds a per-exec nonce, so output cannot end a call by accident.
 */
export class EndMarkerScanner {
  private readonly prefix: Buffer;
  private held: Buffer = Buffer.alloc(0);
  /** The text after the prefix up to the newline, once the whole marker line has arrived. */
  payload: string | undefined;

  constructor(
    prefix: string,
    private readonly onData: (chunk: Buffer) => void,
  ) {
    this.prefix = Buffer.from(prefix);
  }

  get found(): boolean {
    return this.payload !== undefined;
  }

  push(chunk: Buffer): void {
    if (this.found) return;
    let data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    for (let at = data.indexOf(this.prefix); at >= 0; at = data.indexOf(this.prefix)) {
      const newline = data.indexOf(0x0a, at + this.prefix.length);
      if (newline < 0 && data.length - at > MAX_MARKER_BYTES) {
        // Longer than any marker the wrapper prints: output that only looks like one, not held.
        this.onData(data.subarray(0, at + 1));
        data = data.subarray(at + 1);
        continue;
      }
      if (at > 0) this.onData(data.subarray(0, at));
      if (newline < 0) {
        this.held = Buffer.from(data.subarray(at));
        return;
      }
      this.payload = data.subarray(at + this.prefix.length, newline).toString("utf8");
      this.held = Buffer.alloc(0);
      return;
    }
    // Hold back only what could be the start of a marker split across chunks.
    const keep = Math.min(data.length, this.prefix.length - 1);
    const partial = lastPartialMatch(data, this.prefix, keep);
    if (data.length - partial > 0) this.onData(data.subarray(0, data.length - partial));
    this.held = Buffer.from(data.subarray(data.length - partial));
  }

  /** Call at end of stream: whatever was held back was output after all. */
  flush(): void {
    if (this.held.length > 0 && !this.found) this.onData(this.held);
    this.held = Buffer.alloc(0);
  }
}

/** Length of the longest suffix of `data` (at most `max`) that is a prefix of `marker`. */
function lastPartialMatch(data: Buffer, marker: Buffer, max: number): number {
  for (let len = max; len > 0; len--) {
    if (data.subarray(data.length - len).equals(marker.subarray(0, len))) return len;
  }
  return 0;
}
