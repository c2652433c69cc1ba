/** URLs as the presets use them: an allow entry, and the form a sandbox's tool may be given. */
import { ConfigError } from "../errors.js";

/** `https://host[:port]/…` as the entry `host:port` (the scheme's port when none is given). */
export function urlEntry(text: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${flag}: '${text}' is not a URL; give the host with --allow-host`);
  }
  const port = url.port || { "https:": "443", "http:": "80" }[url.protocol];
  // A URL names one host: a "*" there must not become a wildcard entry.
  if (port === undefined || url.hostname === "" || url.hostname.includes("*")) {
    throw new ConfigError(`${flag}: '${text}' is not an http(s) URL; give the host with --allow-host`);
  }
  // URL keeps an IPv6 host in brackets, as an entry spells it.
  return `${url.hostname}:${port}`;
}

export function isHttpUrl(text: string): boolean {
  return /^https?:\/\//i.test(text);
}

/**
 * `text` for the sandbox's own tool: without a user name or password (a credential the host's
 * configuration holds never enters the sandbox; `--secret` is the way to give one). Other text
 * (no URL) is returned as it is.
 */
export function withoutCredentials(text: string): string {
  // cargo writes a registry's protocol before its URL: `sparse+https://…`.
  const [, prefix = "", rest = text] = /^([a-z]+\+)?(.*)$/s.exec(text) ?? [];
  if (!isHttpUrl(rest)) return text;
  try {
    const url = new URL(rest);
    if (url.username === "" && url.password === "") return text;
    url.username = "";
    url.password = "";
    return `${prefix}${url.toString()}`;
  } catch {
    return text;
  }
}

export function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
