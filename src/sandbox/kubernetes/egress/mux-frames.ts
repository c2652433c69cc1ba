/**
 * The frames egress-mux.py (beside this file) and the host speak over the mux's exec: 1 byte kind,
 * 4 bytes connection id, 4 bytes payload length, payload. Length-prefixed, so whatever a
 * connection carries is only ever payload.
 */

export const MUX_HEADER_BYTES = 9;
/** Bytes of one connection that may be on their way, unacknowledged, in either direction. */
export const MUX_WINDOW = 262144;

export type MuxKind = "P" | "O" | "D" | "E" | "C" | "A";

export interface MuxFrame {
  kind: string;
  id: number;
  payload: Buffer;
}

export function encodeMux(kind: MuxKind, id: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(MUX_HEADER_BYTES);
  header.write(kind, 0, 1, "latin1");
  header.writeUInt32BE(id, 1);
  header.writeUInt32BE(payload.length, 5);
  return Buffer.concat([header, payload]);
}

/** An `A` frame's payload: how many bytes were delivered. */
export function ackPayload(bytes: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(bytes, 0);
  return payload;
}

/** Splits the mux's stdout into frames; chunks may cut frames anywhere. */
export class MuxDecoder {
  private pending = Buffer.alloc(0);

  constructor(private readonly onFrame: (frame: MuxFrame) => void) {}

  push(chunk: Buffer): void {
    let data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (data.length >= MUX_HEADER_BYTES) {
      const size = data.readUInt32BE(5);
      if (data.length < MUX_HEADER_BYTES + size) break;
      this.onFrame({
        kind: data.toString("latin1", 0, 1),
        id: data.readUInt32BE(1),
        payload: data.subarray(MUX_HEADER_BYTES, MUX_HEADER_BYTES + size),
      });
      data = data.subarray(MUX_HEADER_BYTES + size);
    }
    this.pending = Buffer.from(data);
  }
}
