/**
 * Splits Docker's multiplexed attach stream (Tty: false) into stdout and stderr frames.
 * Frame: 1 byte stream type (1 stdout, 2 stderr), 3 zero bytes, 4 bytes big-endian payload length.
 * Written here instead of docker-modem's `demuxStream` because that one never ends its destinations
 * and gives no say over when reading stops.
 */
import type { StreamName } from "../../exec/exec-types.js";

const HEADER_BYTES = 8;

export class Demuxer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (stream: StreamName, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    while (data.length >= HEADER_BYTES) {
      const size = data.readUInt32BE(4);
      if (data.length < HEADER_BYTES + size) break;
      const type = data[0];
      const payload = data.subarray(HEADER_BYTES, HEADER_BYTES + size);
      // Type 0 is stdin echoed back; it cannot happen without AttachStdin, so it is ignored.
      if (type === 1) this.onFrame("stdout", payload);
      else if (type === 2) this.onFrame("stderr", payload);
      data = data.subarray(HEADER_BYTES + size);
    }
    // Copy so a large chunk's buffer is not kept alive by a small remainder.
    this.pending = Buffer.from(data);
  }

  /** Bytes of an unfinished frame left over (nonzero only if the stream was cut mid-frame). */
  get leftoverBytes(): number {
    return this.pending.length;
  }
}
