/**
 * The engine-neutral half of `--publish` (src/sandbox/publish/) with an in-process forwarder in
 * place of an engine's exec: bytes both ways with backpressure and the half-close, the records, the
 * forwarder's failures, and a close that comes while a forwarder is still opening.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type {
  ForwarderEnd,
  ForwarderExec,
  OpenForwarder,
} from "../../../../src/sandbox/publish/forwarder-exec.js";
import { PortPublisher } from "../../../../src/sandbox/publish/port-publisher.js";
import type { PublishRecord } from "../../../../src/sandbox/sandbox.js";
import { exchange, freePort } from "../../../support/publish-client.js";

/**
 * A forwarder to a "server" that reads everything, then answers it back reversed once its input
 * ended (so the answer needs the half-close), in chunks, and exits 0.
 */
const reversingForwarder: OpenForwarder = async (_port, output) => {
  const got: Buffer[] = [];
  let inputEnded = false;
  let end: (value: ForwarderEnd) => void = () => {};
  const ended = new Promise<ForwarderEnd>((resolve) => {
    end = resolve;
  });
  const exec: ForwarderExec = {
    write: async (chunk) => {
      got.push(Buffer.from(chunk));
    },
    endInput: () => {
      // As on an engine: a second end of stdin is nothing.
      if (inputEnded) return;
      inputEnded = true;
      const all = Buffer.concat(got).reverse();
      for (let at = 0; at < all.length; at += 65536) output.stdout(all.subarray(at, at + 65536));
      end({ exitCode: 0 });
    },
    pause: () => {},
    resume: () => {},
    close: () => end({ exitCode: undefined, error: "the exec's connection closed without a status" }),
    ended,
  };
  return exec;
};

describe("PortPublisher", () => {
  let publisher: PortPublisher | undefined;
  afterEach(async () => {
    await publisher?.close();
    publisher = undefined;
  });

  async function start(open: OpenForwarder): Promise<{ hostPort: number; records: PublishRecord[] }> {
    const hostPort = await freePort();
    publisher = await PortPublisher.start([{ port: 8000, hostPort }], { open });
    const records: PublishRecord[] = [];
    publisher.subscribe((record) => records.push(record));
    return { hostPort, records };
  }

  const nextRecord = async (records: PublishRecord[]) => {
    while (records.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    return records[0] as PublishRecord;
  };

  it("carries megabytes up, passes the half-close on, and megabytes back after it; records the connection", async () => {
    const { hostPort, records } = await start(reversingForwarder);
    const data = Buffer.alloc(3 * 1024 ** 2);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7919) % 251;
    const back = await exchange(hostPort, data);
    expect(back.equals(Buffer.from(data).reverse())).toBe(true);
    const record = await nextRecord(records);
    expect(record).toMatchObject({ port: 8000, hostPort, bytesUp: data.length, bytesDown: data.length });
    expect(record.client).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(record.error).toBeUndefined();
  });

  it("records the forwarder's own reason when nothing listens inside, and resets the client", async () => {
    const { hostPort, records } = await start(async (port, output) => {
      output.stderr(Buffer.from(`127.0.0.1:${port}: Connection refused\n`));
      return { ...(await reversingForwarder(port, output)), ended: Promise.resolve({ exitCode: 2 }) };
    });
    // A reset, as a refused connection gets: not an empty answer a browser would take for the server's.
    await expect(exchange(hostPort, Buffer.from("hello"))).rejects.toMatchObject({ code: "ECONNRESET" });
    expect((await nextRecord(records)).error).toBe("127.0.0.1:8000: Connection refused");
  });

  it("records an engine's reason when the exec ended without a status it did not cut", async () => {
    const { hostPort, records } = await start(async (port, output) => ({
      ...(await reversingForwarder(port, output)),
      ended: Promise.resolve({ exitCode: undefined, error: 'exec: "python3": executable file not found' }),
    }));
    await expect(exchange(hostPort, Buffer.from("hello"))).rejects.toMatchObject({ code: "ECONNRESET" });
    expect((await nextRecord(records)).error).toBe(
      'the forwarder failed: exec: "python3": executable file not found',
    );
  });

  it("records a forwarder that could not be opened", async () => {
    const { hostPort, records } = await start(async () => {
      throw new Error("the API server did not answer");
    });
    await expect(exchange(hostPort, Buffer.from("hello"))).rejects.toMatchObject({ code: "ECONNRESET" });
    expect((await nextRecord(records)).error).toBe(
      "the forwarder did not start: the API server did not answer",
    );
  });

  it("closes while a forwarder is still opening: the client is cut, the record is out, no error", async () => {
    let opening: () => void = () => {};
    const opened = new Promise<void>((resolve) => {
      opening = resolve;
    });
    const { hostPort, records } = await start(async (port, output) => {
      opening();
      // Still opening when the publisher closes.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return reversingForwarder(port, output);
    });
    const client = connect({ host: "127.0.0.1", port: hostPort });
    client.on("error", () => {});
    const cut = new Promise((resolve) => client.on("close", resolve));
    await opened;
    await publisher?.close();
    await cut;
    expect(records).toHaveLength(1);
    expect(records[0]?.error).toBeUndefined();
  });
});
