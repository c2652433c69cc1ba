/**
 * TLS ended at the gateway, for the hosts a secret goes to: the CONNECT's client socket is answered
 * 200, then spoken to as a TLS server with a certificate for the host the CONNECT named (signed by
 * the run's CA, which the sandbox is told to trust). Each request read from it is decided and
 * forwarded on its own, over a new TLS connection to the origin verified against the host's own
 * trust. The SNI and Host the client sends are not believed: the CONNECT's host is the only one.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { createSecureContext, type SecureContext, TLSSocket } from "node:tls";
import { answerRaw } from "../http/responses.js";
import { hostForFlag, hostSyntax } from "../policy/host-syntax.js";
import type { RunCertificateAuthority } from "./run-ca.js";

/** Where the requests of one terminated CONNECT go. */
export interface TerminatedSite {
  /** As the client gave it in the CONNECT (already allowed). */
  host: string;
  port: number;
}

export type TerminatedHandler = (
  site: TerminatedSite & { hostHeader: string },
  request: IncomingMessage,
  response: ServerResponse,
) => void;

export class TlsTerminator {
  readonly #ca: RunCertificateAuthority;
  readonly #server: Server;
  readonly #sites = new WeakMap<object, TerminatedSite>();
  readonly #contexts = new Map<string, SecureContext>();

  readonly #idleMs: number;

  constructor(
    ca: RunCertificateAuthority,
    handle: TerminatedHandler,
    limits: { headersTimeoutMs: number; idleMs: number },
  ) {
    this.#ca = ca;
    this.#idleMs = limits.idleMs;
    const headersTimeoutMs = limits.headersTimeoutMs;
    this.#server = createServer({
      headersTimeout: headersTimeoutMs,
      requestTimeout: 0,
      maxHeaderSize: 16 * 1024,
    });
    this.#server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const site = this.#sites.get(request.socket);
      if (site === undefined) {
        response.destroy();
        return;
      }
      const port = site.port === 443 ? "" : `:${site.port}`;
      handle({ ...site, hostHeader: `${hostForFlag(canonical(site.host))}${port}` }, request, response);
    });
    this.#server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
      // Bytes the parser refused (a request line with raw non-ASCII, say) are told so, as on the
      // gateway's own socket; a client that never finished its head is just dropped.
      if (error.code?.startsWith("HPE_") && socket.writable) {
        answerRaw(socket, 400, `harness egress gateway: malformed request (${error.code})\n`);
      } else {
        socket.destroy();
      }
    });
  }

  /** Speaks TLS to `client` as `site.host`, and serves the HTTP requests that come over it. */
  accept(client: Socket, site: TerminatedSite): void {
    const secure = new TLSSocket(client, {
      isServer: true,
      secureContext: this.#context(canonical(site.host)),
      ALPNProtocols: ["http/1.1"],
    });
    secure.on("error", () => secure.destroy());
    client.once("close", () => secure.destroy());
    // A client that never finishes its handshake, or keeps the connection with nothing on it, is
    // dropped after the gateway's idle time, as a tunnel would be.
    client.setTimeout(this.#idleMs, () => client.destroy());
    this.#sites.set(secure, site);
    this.#server.emit("connection", secure);
  }

  /** Ends every terminated connection (the gateway is closing). */
  close(): void {
    this.#server.closeAllConnections();
  }

  #context(host: string): SecureContext {
    let context = this.#contexts.get(host);
    if (context === undefined) {
      const leaf = this.#ca.leafFor(host);
      context = createSecureContext({ cert: leaf.certPem, key: leaf.keyPem });
      this.#contexts.set(host, context);
    }
    return context;
  }
}

/** The name lower-cased without a trailing dot, or the canonical address: what the certificate names. */
function canonical(host: string): string {
  const syntax = hostSyntax(host);
  if (syntax.kind === "ip") return syntax.ip.address;
  if (syntax.kind === "name") return syntax.name;
  return host;
}
