/**
 * The executor's frames (format in executor-script.ts): 1 byte kind, 16 bytes nonce, 4 bytes
 * big-endian length, payload. Length-prefixed, so whatever a command prints is only ever payload.
 */
import { FRAME_HEADER_BYTES } from "./executor-protocol.js";

export interface Frame {
  kind: string;
  nonce: string;
  payload: Buffer;
}

/** A frame for the executor's stdin. */
export function encodeFrame(kind: string, nonce: string, payload: Buffer | string): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  header.write(kind, 0, 1, "latin1");
  header.write(nonce, 1, 16, "latin1");
  header.writeUInt32BE(body.length, 17);
  return Buffer.concat([header, body]);
}

/** Splits the executor's stdout into frames; chunks may cut frames anywhere. */
export class FrameDecoder {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes the unfinished frame needs in all: nothing is joined before they are there. */
  private needBytes = FRAME_HEADER_BYTES;

  constructor(private readonly onFrame: (frame: Frame) => void) {}

  push(chunk: Buffer): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < this.needBytes) return;
    let data = this.pending.length === 1 ? chunk : Buffer.concat(this.pending, this.pendingBytes);
    while (data.length >= FRAME_HEADER_BYTES) {
      const size = data.readUInt32BE(17);
      if (data.length < FRAME_HEADER_BYTES + size) {
        this.needBytes = FRAME_HEADER_BYTES + size;
        break;
      }
      this.onFrame({
        kind: data.toString("latin1", 0, 1),
        nonce: data.toString("latin1", 1, 17),
        payload: data.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + size),
      });
      data = data.subarray(FRAME_HEADER_BYTES + size);
      this.needBytes = FRAME_HEADER_BYTES;
    }
    // Copied, so that a large chunk is not kept alive by a small remainder.
    this.pending = data.length > 0 ? [Buffer.from(data)] : [];
    this.pendingBytes = data.length;
  }

  /** Bytes of an unfinished frame (nonzero only when the stream was cut mid-frame). */
  get leftoverBytes(): number {
    return this.pendingBytes;
  }
}
