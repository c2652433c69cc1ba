/**
 * The host side of allowlist mode: an HTTP proxy on a Unix socket that the sandbox reaches through
 * its bind-mounted directory. Every byte from that socket is hostile. Each request is decided on its
 * name before any DNS, resolved only when allowed, refused when an address is private, bounded in
 * number, time and bytes, and recorded.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { chmod, chown, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { dirname, join } from "node:path";
import { rootCertificates } from "node:tls";
import { ConfigError, HarnessError, SandboxError } from "../../errors.js";
import type { EgressMonitor, EgressRecord } from "../sandbox.js";
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";
import { EgressConnection } from "./egress-connection.js";
import { EgressLedger, type EgressTotals } from "./egress-ledger.js";
import { forward, handleRequest } from "./forward-http.js";
import type { Admission, GatewayCore, Reach } from "./gateway-core.js";
import type { CallTag, GatewayOptions } from "./gateway-options.js";
import { answerRaw } from "./http/responses.js";
import { type AllowEntry, Allowlist, parseAllowEntry } from "./policy/allowlist.js";
import { connectOrigin, type Lookup, resolveDestination } from "./policy/destination.js";
import { hostSyntax, shown } from "./policy/host-syntax.js";
import { parseRequestRule, type RequestRule, RequestRules } from "./request-rules.js";
import { RunCertificateAuthority } from "./secrets/run-ca.js";
import { SecretBook } from "./secrets/secret-book.js";
import { TlsTerminator } from "./secrets/tls-terminator.js";
import { newSocketPath, prepareSocketDir } from "./socket-dir.js";
import { handleConnect } from "./tunnel.js";

export type { CallTag, GatewayOptions } from "./gateway-options.js";

const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;

/** Distinct names one wildcard entry may have looked up in a run (why 64: `SANDBOX_DEFAULTS`). */
export const DEFAULT_WILDCARD_NAMES = SANDBOX_DEFAULTS.egressWildcardNames;

export class EgressGateway implements EgressMonitor {
  /** Host path of the socket, `${process.pid}-${random}.sock` in `socketDir`. */
  readonly socketPath: string;
  readonly socketName: string;
  /** The entries in force, normalized ("example.com:443,80"). */
  readonly allowHosts: readonly string[];
  readonly allowPrivate: boolean;
  readonly limitBytes: number;
  readonly wildcardNames: number;
  readonly #options: GatewayOptions;
  readonly #allowlist: Allowlist;
  readonly #lookup: Lookup;
  readonly #server: Server;
  readonly #ledger: EgressLedger;
  readonly #live = new Set<EgressConnection>();
  readonly #sockets = new Set<Socket>();
  /** Names looked up so far under each wildcard entry (by its text). */
  readonly #wildcardNames = new Map<string, Set<string>>();
  #closing: Promise<void> | undefined;
  /** The run's secrets; undefined without `--secret`. */
  readonly #secrets: SecretBook | undefined;
  readonly #rules: RequestRules | undefined;
  readonly #ca: RunCertificateAuthority | undefined;
  readonly #terminator: TlsTerminator | undefined;
  /**
   * Files beside the socket that the sandbox reads to trust the run's CA (no key in either):
   * `ca`, the CA alone, and `bundle`, Node's root store with the CA added, for the tools whose
   * setting replaces the system store. Undefined when nothing is terminated.
   */
  readonly trustFiles: { ca: string; bundle: string } | undefined;

  /** Checks the options, prepares the directory and listens. */
  static async start(options: GatewayOptions): Promise<EgressGateway> {
    // A secret's host is allowed by the secret itself.
    const allowHosts = [...new Set([...options.allowHosts, ...(options.secrets ?? []).map((s) => s.host)])];
    const entries = allowHosts.map((text): AllowEntry => {
      const parsed = parseAllowEntry(text);
      if (!parsed.ok) throw new ConfigError(`--allow-host ${text}: ${parsed.reason}`);
      return parsed.entry;
    });
    const allowlist = new Allowlist(entries);
    const rules = (options.requestRules ?? []).map((text): RequestRule => {
      const parsed = parseRequestRule(text);
      if (!parsed.ok) throw new ConfigError(`--allow-request ${parsed.reason}`);
      const { entry } = parsed.rule;
      if (entry.ports.some((port) => !allowlist.check(entry.host, port).allowed)) {
        throw new ConfigError(
          `--allow-request ${text}: ${entry.text} is not allowed; a rule only narrows an allowed host (add --allow-host ${entry.text})`,
        );
      }
      return parsed.rule;
    });
    const keys = ["limitBytes", "maxConnections", "idleMs", "maxConnectionMs", "wildcardNames"] as const;
    for (const key of keys) {
      const value = key === "wildcardNames" ? (options[key] ?? DEFAULT_WILDCARD_NAMES) : options[key];
      if (!Number.isSafeInteger(value) || value <= 0) {
        throw new ConfigError(`egress gateway: ${key} must be a positive integer, got ${value}`);
      }
    }
    try {
      await prepareSocketDir(options.socketDir, options.owner);
      const { name, path } = newSocketPath(options.socketDir);
      const gateway = new EgressGateway(options, allowlist, new RequestRules(rules), name, path);
      await gateway.#listen();
      await gateway.#writeTrust().catch(async (error: unknown) => {
        await gateway.close();
        throw error;
      });
      return gateway;
    } catch (error) {
      if (error instanceof HarnessError) throw error;
      throw new SandboxError(
        `egress gateway: cannot listen in ${options.socketDir}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  }

  private constructor(
    options: GatewayOptions,
    allowlist: Allowlist,
    rules: RequestRules,
    socketName: string,
    socketPath: string,
  ) {
    this.#options = options;
    this.#allowlist = allowlist;
    this.socketName = socketName;
    this.socketPath = socketPath;
    this.allowHosts = Object.freeze(allowlist.entries.map((e) => e.text));
    this.allowPrivate = options.allowPrivate;
    this.limitBytes = options.limitBytes;
    this.wildcardNames = options.wildcardNames ?? DEFAULT_WILDCARD_NAMES;
    const secrets = options.secrets ?? [];
    this.#secrets = secrets.length > 0 ? new SecretBook(secrets) : undefined;
    const book = this.#secrets;
    this.#ledger = new EgressLedger(options.limitBytes, book && ((text) => book.redact(text)));
    this.#rules = rules.rules.length > 0 ? rules : undefined;
    if (this.#secrets !== undefined || this.#rules !== undefined) {
      this.#ca = new RunCertificateAuthority();
      const core = this.#core();
      this.#terminator = new TlsTerminator(
        this.#ca,
        (site, request, response) => {
          const path = request.url ?? "";
          if (!path.startsWith("/")) {
            core.malformed(shown(site.host), request.method ?? "?", "expected a path (origin-form request)");
            response.writeHead(400).end();
            return;
          }
          forward(core, request, response, { ...site, path, tls: true }).catch(() => response.destroy());
        },
        { headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS, idleMs: options.idleMs },
      );
      const base = socketName.replace(/\.sock$/, "");
      this.trustFiles = { ca: `${base}.ca.pem`, bundle: `${base}.bundle.pem` };
    }
    this.#lookup = options.lookup ?? ((host) => dnsLookup(host, { all: true, verbatim: true }));
    const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
    this.#server = createServer({
      headersTimeout,
      // Off: it would cut a slow upload through a forwarded request; idleMs and maxConnectionMs bound that.
      requestTimeout: 0,
      connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(headersTimeout / 4))),
      // CONNECT needs no Host header; a plain request's host comes from its absolute URL.
      requireHostHeader: false,
      maxHeaderSize: 16 * 1024,
    });
    // Sockets accepted at all (idle keep-alives, requests being read, tunnels): beyond this the
    // kernel's connection is closed at once, so a flood of connects cannot exhaust the host.
    this.#server.maxConnections = 4 * options.maxConnections;
  }

  subscribe(listener: (record: EgressRecord) => void): () => void {
    return this.#ledger.subscribe(listener);
  }

  /** `--secret` grants as `NAME@host:ports`, for the system prompt and the records (never a value). */
  get secrets(): readonly string[] {
    return this.#secrets?.describe() ?? [];
  }

  /** `NAME=placeholder` for each secret, for every command's environment; empty without secrets. */
  secretEnv(): string[] {
    return this.#secrets?.env() ?? [];
  }

  /**
   * `text` with every secret's value, in any form the gateway recognises, put back to its
   * placeholder: for what a command hands back (its output, its refusals), in case the sandbox came
   * to hold a value some other way. As is without secrets.
   */
  redact(text: string): string {
    return this.#secrets?.redact(text) ?? text;
  }

  /** True when the run has secrets (so what a command hands back is redacted). */
  get hasSecrets(): boolean {
    return this.#secrets !== undefined;
  }

  /** Counts so far: connections allowed/denied, bytes up/down, distinct hosts reached. */
  totals(): EgressTotals {
    return this.#ledger.totals(this.#live);
  }

  /** Stops listening, ends every open connection (their records are emitted), unlinks the socket. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const connection of [...this.#live]) connection.abort("the gateway closed");
    for (const socket of this.#sockets) socket.destroy();
    this.#terminator?.close();
    await stopped;
    await rm(this.socketPath, { force: true });
    for (const name of Object.values(this.trustFiles ?? {})) {
      await rm(join(dirname(this.socketPath), name), { force: true });
    }
  }

  async #listen(): Promise<void> {
    const server = this.#server;
    const core = this.#core();
    server.on("connection", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once("close", () => this.#sockets.delete(socket));
    });
    server.on("connect", (request, socket: Socket, head: Buffer) => {
      handleConnect(core, request, socket, head).catch(() => socket.destroy());
    });
    server.on("request", (request, response) => {
      handleRequest(core, request, response).catch(() => response.destroy());
    });
    server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
      // A client that never finished its request head (headersTimeout) is just dropped; bytes the
      // parser refused are a malformed request, recorded.
      if (!error.code?.startsWith("HPE_") || !socket.writable) {
        socket.destroy();
        return;
      }
      const reason = `malformed request (${error.code})`;
      core.malformed("", "?", reason);
      answerRaw(socket, 400, `harness egress gateway: ${reason}\n`);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    try {
      await chmod(this.socketPath, 0o600);
      const owner = this.#options.owner;
      if (owner !== undefined) await chown(this.socketPath, owner.uid, owner.gid);
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** Writes the CA's certificate and the bundle beside the socket, owned like it (the sandbox reads them). */
  async #writeTrust(): Promise<void> {
    if (this.trustFiles === undefined || this.#ca === undefined) return;
    const dir = dirname(this.socketPath);
    const contents = {
      ca: this.#ca.certPem,
      bundle: `${rootCertificates.join("\n")}\n${this.#ca.certPem}`,
    };
    for (const key of ["ca", "bundle"] as const) {
      const path = join(dir, this.trustFiles[key]);
      // "wx": never through a file (or link) someone else put there first.
      await writeFile(path, contents[key], { mode: 0o644, flag: "wx" });
      const owner = this.#options.owner;
      if (owner !== undefined) await chown(path, owner.uid, owner.gid);
    }
  }

  #core(): GatewayCore {
    const secrets = this.#secrets;
    return {
      admit: (host, port, method, headBytes) => this.#admit(host, port, method, headBytes),
      reach: (connection) => this.#reach(connection),
      malformed: (host, method, reason) =>
        this.#ledger.refused(this.#currentCall(), { host, port: 0, method }, 400, reason),
      secrets,
      rules: this.#rules,
      upstreamCa: this.#options.upstreamCa,
      terminates: (host, port) =>
        (secrets?.hasSecretFor(host, port) ?? false) || (this.#rules?.governs(host, port) ?? false),
      terminate: (client, host, port) => this.#terminator?.accept(client, { host, port }),
      refuseContent: (host, port, method, reason, secret) => {
        const tag = this.#currentCall();
        tag?.denied.push({ host, port, reason });
        this.#ledger.refused(
          tag,
          { host, port, method },
          403,
          reason,
          secret === undefined ? undefined : [secret],
        );
      },
    };
  }

  #admit(host: string, port: number, method: string, headBytes: number): Admission {
    const tag = this.#currentCall();
    const asked = shown(host);
    const decision = this.#allowlist.check(host, port);
    if (!decision.allowed) return this.#refuse(tag, asked, port, method, 403, decision.reason);
    if (this.#closing !== undefined)
      return this.#refuse(tag, asked, port, method, 503, "the gateway is closing");
    if (!this.#ledger.fits(headBytes)) {
      // A request that would overspend the budget spends it, as a body that would does.
      this.#spend(headBytes);
      return this.#refuse(tag, asked, port, method, 403, this.#ledger.limitReason);
    }
    const max = this.#options.maxConnections;
    if (this.#live.size >= max) {
      return this.#refuse(tag, asked, port, method, 503, `too many connections at once (limit ${max})`);
    }
    // Last, so that a name admitted here is looked up next: the bound counts names sent to DNS.
    const named = this.#wildcardName(host, decision.entry);
    if (!named.ok) return this.#refuse(tag, asked, port, method, 403, named.reason);
    const connection = new EgressConnection(
      { host: asked, port, method, tag, lookedUp: named.lookedUp },
      {
        idleMs: this.#options.idleMs,
        maxConnectionMs: this.#options.maxConnectionMs,
        spend: (bytes) => this.#spend(bytes),
        ended: (ended, record) => {
          this.#live.delete(ended);
          this.#ledger.ended(record);
        },
      },
    );
    this.#live.add(connection);
    return { ok: true, connection };
  }

  /**
   * The bound on distinct names looked up under one wildcard entry: a name seen before passes, a new
   * one takes a place while there is one. Exact names and IP literals are not bounded (an IP literal
   * is never looked up, an exact name is one name).
   */
  #wildcardName(
    host: string,
    entry: AllowEntry,
  ): { ok: true; lookedUp?: string | undefined } | { ok: false; reason: string } {
    const syntax = hostSyntax(host);
    if (!entry.wildcard || syntax.kind !== "name") return { ok: true };
    const names = this.#wildcardNames.get(entry.text) ?? new Set<string>();
    this.#wildcardNames.set(entry.text, names);
    if (names.has(syntax.name)) return { ok: true };
    const bound = this.wildcardNames;
    if (names.size >= bound) {
      return {
        ok: false,
        reason: `${entry.host} already had ${bound} distinct names looked up this run, the most one wildcard entry may (--egress-wildcard-names raises it)`,
      };
    }
    names.add(syntax.name);
    return { ok: true, lookedUp: syntax.name };
  }

  async #reach(connection: EgressConnection): Promise<Reach> {
    // An admitted host passed the allowlist's syntax check, so `shown` left it as the client sent it.
    const { host, port, tag } = connection.start;
    const destination = await resolveDestination(host, {
      allowPrivate: this.allowPrivate,
      lookup: this.#lookup,
    });
    if (connection.ended) return { ok: false, status: 503, reason: "ended" };
    if (!destination.ok) {
      if (destination.refused) {
        connection.refused(destination.reason);
        tag?.denied.push({ host, port, reason: destination.reason });
      } else {
        connection.note(destination.reason);
      }
      connection.answered(destination.status);
      return { ok: false, status: destination.status, reason: destination.reason };
    }
    try {
      const reached = await connectOrigin(
        destination.addresses,
        port,
        (socket) => connection.onAbort(() => socket.destroy()),
        () => connection.ended,
      );
      if (connection.ended) {
        reached.socket.destroy();
        return { ok: false, status: 503, reason: "ended" };
      }
      connection.connectedTo(reached.address);
      const reachedHost = hostSyntax(host);
      this.#ledger.reached(reachedHost.kind === "ip" ? reachedHost.ip.address : host.toLowerCase());
      return { ok: true, ...reached };
    } catch (error) {
      const reason = `origin unreachable: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
      connection.note(reason);
      connection.answered(502);
      return { ok: false, status: 502, reason };
    }
  }

  /** A refusal of the allowlist, budget or capacity: recorded, and told to the running command. */
  #refuse(
    tag: CallTag | undefined,
    host: string,
    port: number,
    method: string,
    status: 403 | 503,
    reason: string,
  ): { ok: false; status: 403 | 503; reason: string } {
    tag?.denied.push({ host, port, reason });
    this.#ledger.refused(tag, { host, port, method }, status, reason);
    return { ok: false, status, reason };
  }

  /** Takes bytes from the run's budget; when it would overspend, every open connection ends. */
  #spend(bytes: number): boolean {
    if (this.#ledger.spend(bytes)) return true;
    for (const connection of [...this.#live]) connection.abort(this.#ledger.limitReason);
    return false;
  }

  #currentCall(): CallTag | undefined {
    try {
      return this.#options.currentCall?.();
    } catch {
      return undefined;
    }
  }
}
