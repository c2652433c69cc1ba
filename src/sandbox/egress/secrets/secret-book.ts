/**
 * The run's secrets as the gateway uses them: a placeholder for each (what the sandbox sees), the
 * decision on a request head (placeholders swapped for values when the request goes to the secret's
 * own host; refused when a placeholder, in any spelling, goes anywhere else), and the streams that do
 * the same to bodies and take the values back out of responses.
 */
import { randomBytes } from "node:crypto";
import type { Transform } from "node:stream";
import { ConfigError } from "../../../errors.js";
import { type AllowEntry, parseAllowEntry } from "../policy/allowlist.js";
import { hostSyntax } from "../policy/host-syntax.js";
import { percentDecoded, placeholderForms } from "./placeholder-forms.js";
import { checkSecretValue, type SecretGrant } from "./secret-grant.js";
import { type Replacement, replaceInText, replacingStream, watchingStream } from "./stream-replace.js";

/**
 * What every placeholder looks like: `harness-secret-NAME-` and 32 hex digits, new for each harness
 * process. A replay compares outputs with the digits set aside (its placeholders are its own).
 */
export const PLACEHOLDER_PATTERN = /harness-secret-([A-Za-z_][A-Za-z0-9_]*)-[0-9a-f]{32}/g;

interface BookSecret {
  name: string;
  entry: AllowEntry;
  placeholder: string;
  value: string;
  inBody: boolean;
  /** Spellings of the placeholder to look for (placeholder-forms.ts), lower-cased. */
  forms: string[];
}

/** A request the secrets allow, rewritten for the origin; `used` names the secrets whose value it now carries. */
export type HeadDecision =
  | { ok: true; target: string; rawHeaders: string[]; used: string[] }
  | { ok: false; secret: string; reason: string };

/** The error a body stream fails with when it carries a placeholder to the wrong host. */
export class PlaceholderLeak extends Error {
  readonly secret: string;
  constructor(secret: string, reason: string) {
    super(reason);
    this.secret = secret;
  }
}

export class SecretBook {
  readonly #secrets: BookSecret[];

  constructor(grants: readonly SecretGrant[]) {
    this.#secrets = grants.map((grant) => {
      const parsed = parseAllowEntry(grant.host);
      if (!parsed.ok) throw new ConfigError(`--secret ${grant.name}@${grant.host}: ${parsed.reason}`);
      const value = grant.value.reveal();
      checkSecretValue(grant.name, value);
      // Unique to the run, and a shape no real credential has: useless anywhere but through this gateway.
      const placeholder = `harness-secret-${grant.name}-${randomBytes(16).toString("hex")}`;
      const forms = placeholderForms(placeholder).map((f) => f.toLowerCase());
      return { name: grant.name, entry: parsed.entry, placeholder, value, inBody: grant.inBody, forms };
    });
  }

  get empty(): boolean {
    return this.#secrets.length === 0;
  }

  /** `NAME=placeholder` for each secret: what the sandbox's commands get in their environment. */
  env(): string[] {
    return this.#secrets.map((s) => `${s.name}=${s.placeholder}`);
  }

  /** Where each secret may go, for the record and the system prompt: `NAME@host:ports`. */
  describe(): string[] {
    return this.#secrets.map((s) => `${s.name}@${s.entry.text}`);
  }

  /** True when some secret belongs to `host:port` (so TLS to it must be terminated). */
  hasSecretFor(host: string, port: number): boolean {
    return this.#secrets.some((s) => belongsTo(s.entry, host, port));
  }

  /** The names of the secrets that go to `host:port`: what its responses are masked for. */
  ownSecrets(host: string, port: number): string[] {
    return this.#secrets.filter((s) => belongsTo(s.entry, host, port)).map((s) => s.name);
  }

  /**
   * The decision on a request's head to `host:port`: any placeholder of a secret that does not
   * belong there, in any spelling, refuses it; the placeholders of those that do are swapped for
   * their values in the request target (percent-encoded), in header values, and inside
   * `Authorization: Basic`.
   */
  decideHead(host: string, port: number, target: string, rawHeaders: readonly string[]): HeadDecision {
    const haystack = `${target}\n${percentDecoded(target)}\n${rawHeaders.join("\n")}`.toLowerCase();
    for (const secret of this.#secrets) {
      if (belongsTo(secret.entry, host, port)) continue;
      if (secret.forms.some((form) => haystack.includes(form))) {
        return { ok: false, secret: secret.name, reason: this.#wrongHost(secret, host) };
      }
    }
    const own = this.#secrets.filter((s) => belongsTo(s.entry, host, port));
    const used = new Set<string>();
    const swap = (text: string, encode: (value: string) => string): string => {
      let result = text;
      for (const secret of own) {
        if (!result.includes(secret.placeholder)) continue;
        used.add(secret.name);
        result = result.split(secret.placeholder).join(encode(secret.value));
      }
      return result;
    };
    const newTarget = swap(target, encodeURIComponent);
    const headers: string[] = [];
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const name = rawHeaders[i] ?? "";
      let value = swap(rawHeaders[i + 1] ?? "", (v) => v);
      if (name.toLowerCase() === "authorization") value = swapBasic(value, (text) => swap(text, (v) => v));
      headers.push(name, value);
    }
    return { ok: true, target: newTarget, rawHeaders: headers, used: [...used] };
  }

  /**
   * The streams a request body to `host:port` goes through, in order: it fails (PlaceholderLeak) on a
   * placeholder that does not belong there, and swaps those of `--secret-in-body` secrets that do.
   * Undefined when there is nothing to look for.
   */
  requestBody(host: string, port: number): { streams: Transform[]; swaps: boolean } | undefined {
    const foreign = this.#secrets.filter((s) => !belongsTo(s.entry, host, port));
    const swapped = this.#secrets.filter((s) => s.inBody && belongsTo(s.entry, host, port));
    if (foreign.length === 0 && swapped.length === 0) return undefined;
    const owner = new Map<string, BookSecret>();
    for (const secret of foreign) for (const form of secret.forms) owner.set(form, secret);
    const watch = watchingStream([...owner.keys()], (form) => {
      const secret = owner.get(form.toLowerCase());
      return new PlaceholderLeak(secret?.name ?? "?", secret ? this.#wrongHost(secret, host) : "");
    });
    if (swapped.length === 0) return { streams: [watch], swaps: false };
    const replace = replacingStream(
      swapped.map((s) => ({ from: Buffer.from(s.placeholder), to: Buffer.from(s.value) })),
    );
    return { streams: [watch, replace], swaps: true };
  }

  /** The replacements that take the values of `used` back out of a response (value → placeholder). */
  #masks(used: readonly string[]): Replacement[] {
    return this.#secrets
      .filter((s) => used.includes(s.name))
      .flatMap((s) => {
        const forms = new Set([s.value, encodeURIComponent(s.value)]);
        return [...forms].map((form) => ({ from: Buffer.from(form), to: Buffer.from(s.placeholder) }));
      });
  }

  /** Response header lines with the values of `used` put back to their placeholders. */
  maskHeaders(rawHeaders: readonly string[], used: readonly string[]): string[] {
    const masks = this.#masks(used).map((m) => ({ from: m.from.toString(), to: m.to.toString() }));
    return rawHeaders.map((part) => replaceInText(part, masks));
  }

  /** Any text (an origin's status line) with every value put back to its placeholder. */
  maskText(text: string): string {
    return replaceInText(
      text,
      this.#secrets.map((s) => ({ from: s.value, to: s.placeholder })),
    );
  }

  /** A stream that puts the values of `used` back to their placeholders in a response body. */
  maskBody(used: readonly string[]): Transform {
    return replacingStream(this.#masks(used));
  }

  #wrongHost(secret: BookSecret, host: string): string {
    return `carries the placeholder of secret ${secret.name}, which goes to ${secret.entry.text} only, not to ${host}`;
  }
}

/** True when `host:port` (as the client gave it) is the secret's own host. */
export function belongsTo(entry: AllowEntry, host: string, port: number): boolean {
  if (!entry.ports.includes(port)) return false;
  const syntax = hostSyntax(host);
  if (syntax.kind === "ip") return entry.isIp && entry.host === syntax.ip.address;
  if (syntax.kind === "name") return !entry.isIp && entry.host === syntax.name;
  return false;
}

/** `Basic base64(user:pass)` with `swap` applied to the decoded credentials; anything else as is. */
function swapBasic(value: string, swap: (text: string) => string): string {
  const match = /^(\s*basic\s+)([A-Za-z0-9+/=]+)\s*$/i.exec(value);
  if (match === null) return value;
  const decoded = Buffer.from(match[2] ?? "", "base64").toString("utf8");
  const swapped = swap(decoded);
  if (swapped === decoded) return value;
  return `${match[1]}${Buffer.from(swapped, "utf8").toString("base64")}`;
}
