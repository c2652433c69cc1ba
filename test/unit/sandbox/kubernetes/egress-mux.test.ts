/**
 * egress-mux.py (allowlist mode on Kubernetes) under the host's python3, spoken to as the host side
 * does: its port, connections opened, bytes both ways, half-closes, and the credit that bounds what
 * it reads from a client the host has not acknowledged.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { programText } from "../../../../src/sandbox/exec/program-text.js";
import {
  ackPayload,
  encodeMux,
  MUX_WINDOW,
  MuxDecoder,
  type MuxFrame,
} from "../../../../src/sandbox/kubernetes/egress/mux-frames.js";

const CHUNK = 65536;
const source = programText(
  new URL("../../../../src/sandbox/kubernetes/egress/egress-mux.py", import.meta.url),
);

class Mux {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly frames: MuxFrame[] = [];
  /** Every frame, in the order it came. */
  readonly log: MuxFrame[] = [];
  private waiters: (() => void)[] = [];

  constructor() {
    this.child = spawn("python3", ["-I", "-S", "-c", source, "1000:1000"]);
    const decoder = new MuxDecoder((frame) => {
      const copy = { ...frame, payload: Buffer.from(frame.payload) };
      this.frames.push(copy);
      this.log.push(copy);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.child.stdout.on("data", (chunk: Buffer) => decoder.push(chunk));
  }

  /** The next frame matching `want` (earlier ones that do not match are kept). */
  async next(want: (f: MuxFrame) => boolean): Promise<MuxFrame> {
    for (;;) {
      const at = this.frames.findIndex(want);
      if (at >= 0) return this.frames.splice(at, 1)[0] as MuxFrame;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  send(frame: Buffer): void {
    this.child.stdin.write(frame);
  }
}

let mux: Mux | undefined;
afterEach(() => {
  mux?.child.kill();
  mux = undefined;
});

async function opened(): Promise<{ mux: Mux; client: Socket; id: number }> {
  mux = new Mux();
  const port = Number((await mux.next((f) => f.kind === "P")).payload.toString());
  const client = connect(port, "127.0.0.1");
  const id = (await mux.next((f) => f.kind === "O")).id;
  return { mux, client, id };
}

describe("egress-mux.py", () => {
  it("carries bytes both ways, and acknowledges what it handed to the client", async () => {
    const { mux, client, id } = await opened();
    client.write("hello");
    const up = await mux.next((f) => f.kind === "D" && f.id === id);
    expect(up.payload.toString()).toBe("hello");
    const got = new Promise<string>((resolve) => client.once("data", (d: Buffer) => resolve(d.toString())));
    mux.send(encodeMux("D", id, Buffer.from("world")));
    expect(await got).toBe("world");
    const ack = await mux.next((f) => f.kind === "A" && f.id === id);
    expect(ack.payload.readUInt32BE(0)).toBe(5);
    client.destroy();
  });

  it("passes half-closes on and closes once both ends are done", async () => {
    const { mux, client, id } = await opened();
    client.end();
    await mux.next((f) => f.kind === "E" && f.id === id);
    const ended = new Promise<void>((resolve) => client.once("end", resolve));
    mux.send(encodeMux("E", id));
    await ended;
    await mux.next((f) => f.kind === "C" && f.id === id);
  });

  it("a close from the host closes the client", async () => {
    const { mux, client, id } = await opened();
    const closed = new Promise<void>((resolve) => client.once("close", () => resolve()));
    client.on("error", () => {});
    mux.send(encodeMux("C", id));
    await closed;
  });

  it("never has more than its window unacknowledged: a client that floods waits for the host", async () => {
    const { mux, client, id } = await opened();
    const total = 2 * 1024 * 1024;
    client.write(Buffer.alloc(total, 7));
    let received = 0;
    while (received < MUX_WINDOW)
      received += (await mux.next((f) => f.kind === "D" && f.id === id)).payload.length;
    // Unacknowledged, the flood stops at the window; another connection still gets through, and
    // nothing more of the flood came before it (an order, not a time).
    const port = Number(mux.log.find((f) => f.kind === "P")?.payload.toString());
    const other = connect(port, "127.0.0.1");
    const otherId = (await mux.next((f) => f.kind === "O" && f.id !== id)).id;
    other.write("ping");
    const ping = await mux.next((f) => f.kind === "D" && f.id === otherId);
    const before = mux.log.slice(0, mux.log.indexOf(ping));
    const flood = before
      .filter((f) => f.kind === "D" && f.id === id)
      .reduce((n, f) => n + f.payload.length, 0);
    expect(flood).toBeLessThan(MUX_WINDOW + CHUNK);
    // Acknowledged as it comes, the rest follows.
    let acked = 0;
    while (received < total) {
      if (received > acked) {
        mux.send(encodeMux("A", id, ackPayload(received - acked)));
        acked = received;
      }
      received += (await mux.next((f) => f.kind === "D" && f.id === id)).payload.length;
    }
    expect(received).toBe(total);
    client.destroy();
    other.destroy();
  });

  it("exits when its stdin closes", async () => {
    mux = new Mux();
    await mux.next((f) => f.kind === "P");
    const exited = new Promise<number | null>((resolve) => mux?.child.once("exit", resolve));
    mux.child.stdin.end();
    expect(await exited).toBe(0);
  });
});
