/**
 * `--allow-request METHODS@HOST/PATH`: an allowed host narrowed to some methods under some path
 * prefixes (read-only GETs to one API path; pushes to one repository). A host with rules takes only
 * the requests some rule of its own allows; the gateway ends TLS for it so that it sees them. A
 * request's path is compared as sent, and only when no server can read it another way
 * (`http/request-path.ts`): the path judged is the path forwarded.
 */
import { judgedPath } from "./http/request-path.js";
import { type AllowEntry, parseAllowEntry } from "./policy/allowlist.js";
import { belongsTo } from "./secrets/secret-book.js";

export interface RequestRule {
  /** Upper-case methods, or undefined for any (`*`). */
  methods: readonly string[] | undefined;
  entry: AllowEntry;
  /** Normalized, starting with "/". */
  pathPrefix: string;
  /** As shown in refusals and accepted back: `GET,HEAD@api.example.org:443,80/v1/`. */
  text: string;
}

const METHOD = /^[A-Z]+$/;

/** Parses `METHODS@HOST[:PORTS]/PATH-PREFIX`; METHODS is `GET,HEAD` or `*`; the path defaults to `/`. */
export function parseRequestRule(
  text: string,
): { ok: true; rule: RequestRule } | { ok: false; reason: string } {
  const at = text.indexOf("@");
  if (at < 0)
    return { ok: false, reason: `"${text}": give METHODS@HOST/PATH (e.g. GET,HEAD@api.example.org/v1/)` };
  const methodText = text.slice(0, at).trim().toUpperCase();
  const methods = methodText === "*" ? undefined : methodText.split(",").map((m) => m.trim());
  if (methods?.some((m) => !METHOD.test(m))) {
    return { ok: false, reason: `"${text}": methods are names like GET,HEAD,POST, or *` };
  }
  const rest = text.slice(at + 1);
  const slash = rest.indexOf("/");
  const hostText = slash < 0 ? rest : rest.slice(0, slash);
  const parsed = parseAllowEntry(hostText);
  if (!parsed.ok) return { ok: false, reason: `"${text}": ${parsed.reason}` };
  if (parsed.entry.wildcard)
    return { ok: false, reason: `"${text}": a request rule names one host, not a wildcard` };
  const path = normalizedPath(slash < 0 ? "/" : rest.slice(slash));
  if (path === undefined)
    return { ok: false, reason: `"${text}": the path must not hold %2F, %5C or a backslash` };
  const shownMethods = methods === undefined ? "*" : methods.join(",");
  return {
    ok: true,
    rule: {
      methods,
      entry: parsed.entry,
      pathPrefix: path,
      text: `${shownMethods}@${parsed.entry.text}${path}`,
    },
  };
}

export type RuleDecision = { ok: true } | { ok: false; reason: string };

export class RequestRules {
  readonly rules: readonly RequestRule[];

  constructor(rules: readonly RequestRule[]) {
    this.rules = rules;
  }

  /** True when `host:port` has rules (so TLS to it must be ended at the gateway). */
  governs(host: string, port: number): boolean {
    return this.rules.some((r) => belongsTo(r.entry, host, port));
  }

  /**
   * The decision on one request: allowed when the host has no rules, or one of its rules matches.
   * `target` is the path and query exactly as they will be sent.
   */
  check(host: string, port: number, method: string, target: string): RuleDecision {
    const own = this.rules.filter((r) => belongsTo(r.entry, host, port));
    if (own.length === 0) return { ok: true };
    const reading = judgedPath(target);
    const upper = method.toUpperCase();
    if (reading.ok && own.some((r) => matches(r, upper, reading.path))) return { ok: true };
    const shownPath = reading.ok ? reading.path : JSON.stringify(target.split("?")[0]).slice(1, -1);
    const why = reading.ok
      ? "no request rule allows it"
      : `${reading.reason}, which a server may read another way`;
    return {
      ok: false,
      reason: `${upper} ${shownPath}: ${why} (rules: ${own.map((r) => r.text).join(", ")}; --allow-request)`,
    };
  }
}

function matches(rule: RequestRule, method: string, path: string): boolean {
  if (rule.methods !== undefined && !rule.methods.includes(method)) return false;
  const prefix = rule.pathPrefix;
  if (prefix.endsWith("/")) return path.startsWith(prefix) || `${path}/` === prefix;
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * A rule's own path prefix with dot segments resolved (as `new URL` does, `%2e` included), or
 * undefined when ambiguous.
 */
export function normalizedPath(raw: string): string | undefined {
  if (/%2f|%5c|\\/i.test(raw)) return undefined;
  try {
    return new URL(raw.startsWith("/") ? raw : `/${raw}`, "http://rule.invalid").pathname;
  } catch {
    return undefined;
  }
}
