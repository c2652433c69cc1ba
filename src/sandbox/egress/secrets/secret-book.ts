/**
 * The run's secrets as the gateway uses them: a placeholder for each (what the sandbox sees), the
 * decision on a request head (placeholders swapped for values when the request goes to the secret's
 * own host; refused when a placeholder or a value, in any form a program could decode back, goes
 * anywhere else), and the streams that do the same to bodies and take the values back out of
 * responses, in every such form (`forms/`).
 */
import { randomBytes } from "node:crypto";
import type { Transform } from "node:stream";
import { ConfigError } from "../../../errors.js";
import { type AllowEntry, parseAllowEntry } from "../policy/allowlist.js";
import { hostSyntax } from "../policy/host-syntax.js";
import { FormScanner } from "./forms/form-scanner.js";
import { firstForm, maskedText, maskingStream, watchingStream } from "./forms/form-streams.js";
import { rewritten, valueForms } from "./forms/value-forms.js";
import { checkSecretValue, type SecretGrant } from "./secret-grant.js";
import { replacingStream } from "./stream-replace.js";

/**
 * What every placeholder looks like: `harness-secret-NAME-` and 32 to 34 hex digits, new for each
 * harness process. A replay compares outputs with the digits set aside (its placeholders are its own).
 */
export const PLACEHOLDER_PATTERN = /harness-secret-([A-Za-z_][A-Za-z0-9_]*)-[0-9a-f]{32,34}/g;

interface BookSecret {
  name: string;
  entry: AllowEntry;
  placeholder: string;
  value: string;
  inBody: boolean;
}

/** What a request carries that may not go where it is going. */
interface Carried {
  secret: BookSecret;
  what: "value" | "placeholder";
}

/** A request the secrets allow, rewritten for the origin; `used` names the secrets whose value it now carries. */
export type HeadDecision =
  | { ok: true; target: string; rawHeaders: string[]; used: string[] }
  | { ok: false; secret: string; reason: string };

/** The error a body stream fails with when it carries a value or placeholder to the wrong host. */
export class SecretLeak extends Error {
  readonly secret: string;
  constructor(secret: string, reason: string) {
    super(reason);
    this.secret = secret;
  }
}

export class SecretBook {
  readonly #secrets: BookSecret[];
  /** Scanners made so far, by the names of the secrets they look for (few distinct sets per run). */
  readonly #maskers = new Map<string, FormScanner<BookSecret>>();
  readonly #watchers = new Map<string, FormScanner<Carried>>();

  constructor(grants: readonly SecretGrant[]) {
    this.#secrets = grants.map((grant) => {
      const parsed = parseAllowEntry(grant.host);
      if (!parsed.ok) throw new ConfigError(`--secret ${grant.name}@${grant.host}: ${parsed.reason}`);
      const value = grant.value.reveal();
      checkSecretValue(grant.name, value);
      return {
        name: grant.name,
        entry: parsed.entry,
        placeholder: newPlaceholder(grant.name, value),
        value,
        inBody: grant.inBody,
      };
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
   * The decision on a request's head to `host:port`: a value or placeholder of a secret that does
   * not belong there, in any form, anywhere in the name, the target or a header, refuses it; the
   * placeholders of those that do are swapped for their values in the request target
   * (percent-encoded), in header values, and inside `Authorization: Basic`.
   */
  decideHead(host: string, port: number, target: string, rawHeaders: readonly string[]): HeadDecision {
    const watcher = this.#watcher(host, port);
    for (const text of [host, target, ...rawHeaders]) {
      const found = watcher.empty ? undefined : firstForm(watcher, text);
      if (found !== undefined) {
        return {
          ok: false,
          secret: found.form.tag.secret.name,
          reason: this.#wrongHost(found.form.tag, host),
        };
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

  /** The decision on a name alone (a CONNECT's): refused when it carries what may not go to it. */
  decideName(host: string, port: number): { ok: true } | { ok: false; secret: string; reason: string } {
    const decision = this.decideHead(host, port, "", []);
    return decision.ok ? { ok: true } : decision;
  }

  /**
   * The streams a request body to `host:port` goes through, in order: it fails (SecretLeak) on a
   * value or placeholder that does not belong there, and swaps the placeholders of `--secret-in-body`
   * secrets that do. Undefined when there is nothing to look for.
   */
  requestBody(host: string, port: number): { streams: Transform[]; swaps: boolean } | undefined {
    const watcher = this.#watcher(host, port);
    const swapped = this.#secrets.filter((s) => s.inBody && belongsTo(s.entry, host, port));
    const streams: Transform[] = [];
    if (!watcher.empty) {
      streams.push(
        watchingStream(
          watcher,
          (found) => new SecretLeak(found.form.tag.secret.name, this.#wrongHost(found.form.tag, host)),
        ),
      );
    }
    if (swapped.length > 0) {
      streams.push(
        replacingStream(swapped.map((s) => ({ from: Buffer.from(s.placeholder), to: Buffer.from(s.value) }))),
      );
    }
    return streams.length === 0 ? undefined : { streams, swaps: swapped.length > 0 };
  }

  /** True when a request body to `host:port` is looked into (so it must be readable: not compressed). */
  watchesBodies(host: string, port: number): boolean {
    return !this.#watcher(host, port).empty;
  }

  /** Response header lines with the values of `used` put back to their placeholders, in any form. */
  maskHeaders(rawHeaders: readonly string[], used: readonly string[]): string[] {
    const masker = this.#masker(used);
    return rawHeaders.map((part) => maskedText(masker, part, (chain) => this.#placeholders(chain)));
  }

  /** A status line's text with the values of `used` put back to their placeholders. */
  maskText(text: string, used: readonly string[]): string {
    return maskedText(this.#masker(used), text, (chain) => this.#placeholders(chain));
  }

  /** Any text with every secret's value, in any form, put back to its placeholder. */
  redact(text: string): string {
    return maskedText(this.#masker(this.#secrets.map((s) => s.name)), text, (chain) =>
      this.#placeholders(chain),
    );
  }

  /** A stream that puts the values of `used` back to their placeholders in a response body, in any form. */
  maskBody(used: readonly string[]): Transform {
    return maskingStream(this.#masker(used), (chain) => this.#placeholders(chain));
  }

  #placeholders(chain: Parameters<typeof rewritten<BookSecret>>[0]): Buffer {
    return rewritten(chain, (secret) => Buffer.from(secret.placeholder, "utf8"));
  }

  /** Looks for every form of the values of `used` (as is and as the gateway percent-encodes them). */
  #masker(used: readonly string[]): FormScanner<BookSecret> {
    const key = [...used].sort().join(" ");
    let scanner = this.#maskers.get(key);
    if (scanner === undefined) {
      const forms = this.#secrets
        .filter((s) => used.includes(s.name))
        .flatMap((s) => spellings(s.value).flatMap((bytes) => valueForms(bytes, s)));
      scanner = new FormScanner(forms);
      this.#maskers.set(key, scanner);
    }
    return scanner;
  }

  /** Looks for every form of the values and placeholders of the secrets that do not go to `host:port`. */
  #watcher(host: string, port: number): FormScanner<Carried> {
    const foreign = this.#secrets.filter((s) => !belongsTo(s.entry, host, port));
    const key = foreign.map((s) => s.name).join(" ");
    let scanner = this.#watchers.get(key);
    if (scanner === undefined) {
      const forms = foreign.flatMap((secret) => [
        ...spellings(secret.value).flatMap((bytes) => valueForms<Carried>(bytes, { secret, what: "value" })),
        ...valueForms<Carried>(Buffer.from(secret.placeholder), { secret, what: "placeholder" }),
      ]);
      scanner = new FormScanner(forms);
      this.#watchers.set(key, scanner);
    }
    return scanner;
  }

  #wrongHost({ secret, what }: Carried, host: string): string {
    return `carries the ${what} of secret ${secret.name}, which goes to ${secret.entry.text} only, not to ${host}`;
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

/**
 * A placeholder unique to the run: `harness-secret-NAME-` and 32 to 34 random hex digits, as many as
 * make it as long as the value modulo 3 bytes, so that the value's base64 with the placeholder put in
 * its place keeps every character after it where it was (the text around still decodes).
 */
function newPlaceholder(name: string, value: string): string {
  const base = `harness-secret-${name}-`;
  const digits = randomBytes(17).toString("hex");
  const want = Buffer.byteLength(value, "utf8") % 3;
  for (let length = 32; length <= 34; length += 1) {
    if ((Buffer.byteLength(base) + length) % 3 === want) return `${base}${digits.slice(0, length)}`;
  }
  return `${base}${digits.slice(0, 32)}`;
}

/** The value as is and as the gateway puts it into a URL (percent-encoded), when that differs. */
function spellings(value: string): Buffer[] {
  const encoded = encodeURIComponent(value);
  return encoded === value
    ? [Buffer.from(value, "utf8")]
    : [Buffer.from(value, "utf8"), Buffer.from(encoded, "utf8")];
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
