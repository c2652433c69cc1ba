/**
 * Keeps the head and the tail of a byte stream within a fixed budget, however much is written:
 * errors are usually at the end, what was being run is at the start. Memory stays bounded at
 * `headBytes + tailBytes` (plus one chunk in flight). This is the one place a command's output is
 * cut, and its marker line the one that says so: the bash tool shows the text as kept and only adds
 * where the whole output was saved.
 */
import { type OutputText, outputText } from "./output-text.js";

export class OutputBuffer {
  private readonly head: Buffer;
  private headLength = 0;
  private readonly tail: Buffer;
  /** Next write position in the ring. */
  private tailStart = 0;
  private tailLength = 0;
  /** Every byte written, kept or not. */
  totalBytes = 0;

  constructor(
    readonly headBytes: number,
    readonly tailBytes: number,
  ) {
    this.head = Buffer.alloc(headBytes);
    this.tail = Buffer.alloc(tailBytes);
  }

  write(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    let rest = chunk;
    if (this.headLength < this.headBytes) {
      const taken = rest.copy(
        this.head,
        this.headLength,
        0,
        Math.min(rest.length, this.headBytes - this.headLength),
      );
      this.headLength += taken;
      rest = rest.subarray(taken);
    }
    if (rest.length === 0 || this.tailBytes === 0) return;
    if (rest.length >= this.tailBytes) {
      rest.copy(this.tail, 0, rest.length - this.tailBytes);
      this.tailStart = 0;
      this.tailLength = this.tailBytes;
      return;
    }
    const firstPart = Math.min(rest.length, this.tailBytes - this.tailStart);
    rest.copy(this.tail, this.tailStart, 0, firstPart);
    rest.copy(this.tail, 0, firstPart);
    this.tailStart = (this.tailStart + rest.length) % this.tailBytes;
    this.tailLength = Math.min(this.tailBytes, this.tailLength + rest.length);
  }

  /** Bytes written but not kept. */
  get droppedBytes(): number {
    return this.totalBytes - this.headLength - this.tailLength;
  }

  get isTruncated(): boolean {
    return this.droppedBytes > 0;
  }

  /**
   * The kept text (`outputText`: valid UTF-8 as is, NULs and invalid bytes as `\xNN` escapes,
   * counted), with a line saying how much was cut between head and tail. Cut points are moved to
   * character boundaries so a multi-byte character is never split into two escaped halves.
   */
  decoded(): OutputText {
    const head = this.head.subarray(0, this.headLength);
    if (!this.isTruncated) return outputText(Buffer.concat([head, this.orderedTail()]));
    const headKept = trimIncompleteEnd(head);
    const tail = this.orderedTail();
    const tailSkipped = skipContinuationBytes(tail);
    // The cut moved to character boundaries: the bytes trimmed there are not shown either.
    const cut = this.droppedBytes + (head.length - headKept) + tailSkipped;
    const before = outputText(head.subarray(0, headKept));
    const after = outputText(tail.subarray(tailSkipped));
    return {
      text: `${before.text}\n[... ${cut} bytes of output cut here; ${this.totalBytes} bytes in all ...]\n${after.text}`,
      notTextBytes: before.notTextBytes + after.notTextBytes,
    };
  }

  toString(): string {
    return this.decoded().text;
  }

  private orderedTail(): Buffer {
    if (this.tailLength < this.tailBytes) return this.tail.subarray(0, this.tailLength);
    return Buffer.concat([this.tail.subarray(this.tailStart), this.tail.subarray(0, this.tailStart)]);
  }
}

/** Length of `bytes` without a trailing, incomplete UTF-8 sequence. */
function trimIncompleteEnd(bytes: Buffer): number {
  let i = bytes.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && ((bytes[i] ?? 0) & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return bytes.length;
  const lead = bytes[i] ?? 0;
  // Only a lead byte that can start a valid sequence (0xc2–0xf4) waits for the rest of it.
  const needed = lead > 0xf4 ? 0 : lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc2 ? 1 : 0;
  return needed > continuation ? i : bytes.length;
}

/** Number of leading UTF-8 continuation bytes (the rest of a character cut off at the front). */
function skipContinuationBytes(bytes: Buffer): number {
  let i = 0;
  while (i < 3 && i < bytes.length && ((bytes[i] ?? 0) & 0xc0) === 0x80) i++;
  return i;
}
