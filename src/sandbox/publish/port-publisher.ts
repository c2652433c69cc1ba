/**
 * `--publish PORT[:HOSTPORT]`: a listener on the host's 127.0.0.1:HOSTPORT per published port, for
 * as long as the sandbox is open. Each accepted connection is carried into the sandbox by its own
 * forwarder exec (forward-connection.ts, opened by the engine) to PORT on the sandbox's loopback: the
 * container or pod keeps no interface but `lo`, and no engine port mapping or port-forward. Only
 * loopback is bound on the host, and every connection is recorded when it ends (PublishMonitor).
 */
import { createServer, type Server, type Socket } from "node:net";
import createDebug from "debug";
import { ConfigError } from "../../errors.js";
import type { PublishedPort, PublishMonitor, PublishRecord } from "../sandbox.js";
import { type PublishRequest, SANDBOX_DEFAULTS } from "../sandbox-request.js";
import { forwardConnection } from "./forward-connection.js";
import type { OpenForwarder } from "./forwarder-exec.js";

const log = createDebug("harness:publish");

export interface PublishTarget {
  /** How the engine starts one connection's forwarder, as the sandbox user (never root). */
  open: OpenForwarder;
  /** Most connections open at once per port. Default `SANDBOX_DEFAULTS.publishMaxConnections`. */
  maxConnections?: number | undefined;
}

export class PortPublisher implements PublishMonitor {
  private readonly listeners = new Set<(record: PublishRecord) => void>();
  private readonly sockets = new Set<Socket>();
  private readonly forwarding = new Set<Promise<void>>();
  private readonly closing = new AbortController();

  private constructor(
    readonly ports: readonly PublishedPort[],
    private readonly servers: Server[],
  ) {}

  /** Listens on every host port; rejects (closing those already open) when one cannot be bound. */
  static async start(requests: readonly PublishRequest[], target: PublishTarget): Promise<PortPublisher> {
    const servers: Server[] = [];
    const publisher = new PortPublisher(
      requests.map(({ port, hostPort }) => ({ port, hostPort })),
      servers,
    );
    try {
      for (const request of requests) servers.push(await publisher.listen(request, target));
    } catch (error) {
      await publisher.close();
      throw error;
    }
    return publisher;
  }

  subscribe(listener: (record: PublishRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async listen(request: PublishRequest, target: PublishTarget): Promise<Server> {
    const max = target.maxConnections ?? SANDBOX_DEFAULTS.publishMaxConnections;
    let open = 0;
    // Paused until the forwarder runs: nothing the client sends is read before it has somewhere to go.
    // Half-open: a client's end of sending is passed on, and the answer still comes back after it.
    const server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (socket) => {
      const opened = Date.now();
      const client = `${socket.remoteAddress ?? "?"}:${socket.remotePort ?? 0}`;
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
      socket.on("error", (error) => log("client %s: %s", client, error.message));
      const done =
        open >= max
          ? Promise.resolve({ bytesUp: 0, bytesDown: 0, error: `more than ${max} connections at once` })
          : forwardConnection(socket, target.open, request.port, this.closing.signal);
      if (open >= max) socket.destroy();
      open += 1;
      const finished = done.then((outcome) => {
        open -= 1;
        this.emit({
          time: new Date(opened).toISOString(),
          ...request,
          client,
          bytesUp: outcome.bytesUp,
          bytesDown: outcome.bytesDown,
          durationMs: Date.now() - opened,
          ...(outcome.error === undefined ? {} : { error: outcome.error }),
        });
      });
      this.forwarding.add(finished);
      void finished.finally(() => this.forwarding.delete(finished));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: "127.0.0.1", port: request.hostPort }, () => {
        server.off("error", reject);
        resolve();
      });
    }).catch((error: NodeJS.ErrnoException) => {
      const why = error.code === "EADDRINUSE" ? "is in use" : `cannot be listened on (${error.message})`;
      throw new ConfigError(
        `--publish ${request.port}:${request.hostPort}: 127.0.0.1:${request.hostPort} ${why}; choose another host port with --publish ${request.port}:HOSTPORT`,
        { cause: error },
      );
    });
    server.on("error", (error) => log("listener on %d: %s", request.hostPort, error.message));
    log("sandbox port %d published on 127.0.0.1:%d", request.port, request.hostPort);
    return server;
  }

  private emit(record: PublishRecord): void {
    for (const listener of this.listeners) {
      try {
        listener(record);
      } catch (error) {
        log("a publish listener threw: %s", (error as Error).message);
      }
    }
  }

  /** Stops listening, cuts the connections still open, and waits until their records are out. */
  async close(): Promise<void> {
    // A server's close callback waits for its connections: they are cut first.
    const closed = this.servers.map(
      (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    );
    for (const socket of this.sockets) socket.destroy();
    this.closing.abort();
    await Promise.all(closed);
    await Promise.allSettled([...this.forwarding]);
  }
}
