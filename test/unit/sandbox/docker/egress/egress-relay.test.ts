/** Starting and watching the relay's exec, against a hand-built exec whose stream the test writes. */
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../../../src/errors.js";
import { EgressRelay, RelayStartError } from "../../../../../src/sandbox/docker/egress/egress-relay.js";
import { NO_PYTHON, SOCKET_MISSING } from "../../../../../src/sandbox/docker/egress/egress-relay-script.js";
import { frame } from "../exec/fake-docker.js";

/** A container whose one exec is the relay: `say` writes to its stdout, `running` is what inspect says. */
function fakeRelayContainer() {
  const stream = new PassThrough();
  const state = { running: true, created: undefined as Docker.ExecCreateOptions | undefined, started: {} };
  const exec = {
    id: "relay-exec",
    start: async (options: object) => {
      state.started = options;
      return stream;
    },
    inspect: async () => ({ Running: state.running }),
  };
  const container = {
    id: "c0ffee",
    exec: async (options: Docker.ExecCreateOptions) => {
      state.created = options;
      return exec;
    },
  } as unknown as Docker.Container;
  return {
    container,
    stream,
    state,
    say: (text: string) => stream.write(frame(1, text)),
    stderr: (text: string) => stream.write(frame(2, text)),
  };
}

describe("EgressRelay", () => {
  it("runs the relay as the machinery's user, acting as the sandbox user, with stdin attached, and takes the port from its first line", async () => {
    const fake = fakeRelayContainer();
    const starting = EgressRelay.start(fake.container, "1000:1000", "0:0", "/run/harness-egress/1-ab.sock");
    fake.stderr("noise\n");
    fake.say("PORT 4");
    fake.say("1234\n");
    const relay = await starting;
    expect(relay.port).toBe(41234);
    expect(fake.state.created).toMatchObject({ User: "0:0", AttachStdin: true, Tty: false });
    expect(fake.state.created?.Cmd?.slice(-2)).toEqual(["/run/harness-egress/1-ab.sock", "1000:1000"]);
    expect(fake.state.started).toMatchObject({ hijack: true, stdin: true });
    await relay.close(100);
  });

  it("keeps reading the stream after the first line (an unread exec stream can hold up other execs)", async () => {
    const fake = fakeRelayContainer();
    const starting = EgressRelay.start(fake.container, "1000:1000", "1000:1000", "/s");
    fake.say("PORT 5000\n");
    const relay = await starting;
    // 1 MiB more than a PassThrough buffers: written only if someone keeps reading.
    const drained = fake.stream.write(frame(2, Buffer.alloc(1024 * 1024)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained || fake.stream.readableLength === 0).toBe(true);
    await relay.close(100);
  });

  it("is running while the exec is, and not once its stream ended or inspect says so", async () => {
    const fake = fakeRelayContainer();
    const starting = EgressRelay.start(fake.container, "1000:1000", "1000:1000", "/s");
    fake.say("PORT 5000\n");
    const relay = await starting;
    expect(await relay.running()).toBe(true);
    fake.state.running = false;
    expect(await relay.running()).toBe(false);
    fake.state.running = true;
    fake.stream.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await relay.running()).toBe(false);
  });

  it("closes by ending its stdin and waits for the stream to end", async () => {
    const fake = fakeRelayContainer();
    const starting = EgressRelay.start(fake.container, "1000:1000", "1000:1000", "/s");
    fake.say("PORT 5000\n");
    const relay = await starting;
    let ended = false;
    fake.stream.on("finish", () => {
      ended = true;
    });
    await relay.close(1000);
    expect(ended).toBe(true);
    expect(fake.stream.destroyed).toBe(true);
  });

  it("says an image without python3 needs one, in a SandboxError", async () => {
    const fake = fakeRelayContainer();
    const starting = EgressRelay.start(fake.container, "1000:1000", "1000:1000", "/s");
    fake.say(`${NO_PYTHON}\n`);
    const error = await starting.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as Error).message).toMatch(/^allowlist mode needs python3 in the image/);
    expect(error).toMatchObject({ socketMissing: false, containerId: "c0ffee" });
    expect(fake.stream.destroyed).toBe(true);
  });

  it("flags a socket the container does not see, so the caller can restart the container", async () => {
    const fake = fakeRelayContainer();
    const starting = EgressRelay.start(fake.container, "1000:1000", "1000:1000", "/s");
    fake.say(`${SOCKET_MISSING}: No such file or directory\n`);
    const error = await starting.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RelayStartError);
    expect(error).toMatchObject({ socketMissing: true });
    expect((error as Error).message).toContain(
      "does not see the gateway's socket in the sandbox (No such file or directory)",
    );
  });

  it("fails, not hangs, when the relay exits silently or never says its port", async () => {
    const gone = fakeRelayContainer();
    const exiting = EgressRelay.start(gone.container, "1000:1000", "1000:1000", "/s");
    gone.stream.end();
    await expect(exiting).rejects.toThrow("the network relay exited before saying its port");
    const silent = fakeRelayContainer();
    await expect(EgressRelay.start(silent.container, "1000:1000", "1000:1000", "/s", 50)).rejects.toThrow(
      "the network relay did not say its port within 50 ms",
    );
    expect(silent.stream.destroyed).toBe(true);
  });

  it("refuses a first line that is not a port", async () => {
    const fake = fakeRelayContainer();
    const starting = EgressRelay.start(fake.container, "1000:1000", "1000:1000", "/s");
    fake.say("PORT 12x\n");
    await expect(starting).rejects.toThrow('the network relay said something unexpected: "PORT 12x"');
  });
});
