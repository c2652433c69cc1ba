/**
 * The gateway's resolver in tests: documentation names mapped to 127.0.0.1, every other name
 * refused, so no test ever makes a real DNS lookup (nor a connection past loopback).
 */

export interface LookupAddress {
  address: string;
  family: number;
}

export interface LoopbackLookup {
  /** What the gateway is given as its resolver. */
  readonly lookup: (hostname: string) => Promise<LookupAddress[]>;
  /** Every name asked for, in order: a refused host must never appear (names are checked before DNS). */
  readonly asked: readonly string[];
}

/** Resolves exactly `names` (case-insensitive) to 127.0.0.1; any other name fails like ENOTFOUND. */
export function loopbackLookup(names: readonly string[]): LoopbackLookup {
  const known = new Set(names.map((name) => name.toLowerCase()));
  const asked: string[] = [];
  const lookup = async (hostname: string): Promise<LookupAddress[]> => {
    asked.push(hostname);
    if (known.has(hostname.toLowerCase())) return [{ address: "127.0.0.1", family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (test resolver)`), {
      code: "ENOTFOUND",
      hostname,
    });
  };
  return { lookup, asked };
}
