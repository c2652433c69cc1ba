/**
 * `--secret NAME@HOST`: the environment variable NAME's value may go to HOST (an allow entry), and
 * nowhere else. The value is read on the host and never enters the sandbox; inside, NAME holds a
 * placeholder the gateway swaps for the value on requests to HOST only.
 */
import { inspect } from "node:util";
import { ConfigError } from "../../../errors.js";
import { type AllowEntry, parseAllowEntry } from "../policy/allowlist.js";

/** A variable name a shell can export. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The parsed `NAME@HOST`, before any value is read. */
export interface SecretSpec {
  name: string;
  /** The allow entry text, normalized ("registry.example.org:443,80"). */
  host: string;
  /** Also swap the placeholder in request bodies to HOST (`--secret-in-body NAME`). */
  inBody: boolean;
}

/**
 * A secret's value, kept out of every serialization: JSON, `util.inspect` and string conversion all
 * show `[secret NAME]`, so a config or request object that holds one can be logged without leaking it.
 */
export class SecretValue {
  readonly #value: string;
  readonly #label: string;

  constructor(name: string, value: string) {
    this.#value = value;
    this.#label = `[secret ${name}]`;
  }

  /** The value itself, for the gateway's substitution only. */
  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return this.#label;
  }

  toString(): string {
    return this.#label;
  }

  [inspect.custom](): string {
    return this.#label;
  }
}

/** A secret ready for the gateway: what it is called, where it may go, its value. */
export interface SecretGrant extends SecretSpec {
  value: SecretValue;
}

/** Parses `NAME@HOST` (HOST in the `--allow-host` syntax). */
export function parseSecretSpec(
  text: string,
): { ok: true; spec: SecretSpec; entry: AllowEntry } | { ok: false; reason: string } {
  const at = text.indexOf("@");
  if (at < 0) return { ok: false, reason: `"${text}": give NAME@HOST (e.g. NPM_TOKEN@registry.example.org)` };
  const name = text.slice(0, at).trim();
  if (!NAME.test(name)) {
    return { ok: false, reason: `"${name}" is not an environment variable name (letters, digits, _)` };
  }
  const parsed = parseAllowEntry(text.slice(at + 1));
  if (!parsed.ok) return { ok: false, reason: parsed.reason };
  if (parsed.entry.wildcard) {
    return {
      ok: false,
      reason: `${name}@${parsed.entry.host}: a secret goes to one host, not a wildcard (name the host)`,
    };
  }
  return { ok: true, spec: { name, host: parsed.entry.text, inBody: false }, entry: parsed.entry };
}

/** Shortest value taken: responses are searched for it, and a short one would match ordinary text. */
const MIN_VALUE_LENGTH = 8;

/** Throws ConfigError for a value the gateway cannot carry safely (never quoting the value). */
export function checkSecretValue(name: string, value: string): void {
  // The value goes into header lines: a line break or NUL in it would split the request.
  if (/[\0\r\n]/.test(value)) {
    throw new ConfigError(`--secret ${name}: its value holds a line break or NUL; it cannot go in a header`);
  }
  if (value.length < MIN_VALUE_LENGTH) {
    throw new ConfigError(
      `--secret ${name}: its value is shorter than ${MIN_VALUE_LENGTH} characters, too short to tell apart from other text`,
    );
  }
}
