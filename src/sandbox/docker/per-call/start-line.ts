/**
 * The line the exec wrapper prints before the command runs: `START_LEAD nonce:pid:starttime`. It
 * must be the very first bytes of stdout, so only the wrapper can have written it; a later line that
 * looks the same is the command's output. The killer gets the pid and start time from here, never
 * from a file the command could rewrite.
 */

/** The wrapper's process: its pid (the command's process group) and start time in clock ticks. */
export interface WrapperStart {
  pid: number;
  startTime: string;
}

/** Longest start line accepted: lead, 16-hex nonce, a pid and a start time, with room to spare. */
const MAX_LINE_BYTES = 256;

export class StartLineReader {
  private held: Buffer = Buffer.alloc(0);
  private decided = false;
  /** The wrapper's start, once its line has arrived; stays undefined if stdout began otherwise. */
  start: WrapperStart | undefined;
  private readonly expected: Buffer;
  private readonly waiters: ((start: WrapperStart | undefined) => void)[] = [];

  constructor(
    lead: string,
    nonce: string,
    private readonly onData: (chunk: Buffer) => void,
  ) {
    this.expected = Buffer.from(`${lead}${nonce}:`);
  }

  /** Resolves once the start line was read, or stdout turned out not to begin with one. */
  whenDecided(): Promise<WrapperStart | undefined> {
    if (this.decided) return Promise.resolve(this.start);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  push(chunk: Buffer): void {
    if (this.decided) {
      this.onData(chunk);
      return;
    }
    const data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const compared = Math.min(data.length, this.expected.length);
    if (!data.subarray(0, compared).equals(this.expected.subarray(0, compared))) {
      this.decide(undefined, data);
      return;
    }
    const newline = data.indexOf(0x0a, this.expected.length);
    if (newline < 0) {
      if (data.length > MAX_LINE_BYTES) this.decide(undefined, data);
      else this.held = Buffer.from(data);
      return;
    }
    const match = /^(\d+):(\d+)$/.exec(data.subarray(this.expected.length, newline).toString("latin1"));
    if (!match?.[1] || !match[2]) {
      this.decide(undefined, data);
      return;
    }
    this.decide({ pid: Number(match[1]), startTime: match[2] }, data.subarray(newline + 1));
  }

  /** Call at end of stream: bytes held back were output after all. */
  flush(): void {
    if (!this.decided) this.decide(undefined, this.held);
  }

  private decide(start: WrapperStart | undefined, rest: Buffer): void {
    this.decided = true;
    this.start = start;
    this.held = Buffer.alloc(0);
    if (rest.length > 0) this.onData(rest);
    for (const resolve of this.waiters.splice(0)) resolve(start);
  }
}
