/**
 * From an allowed host to a connected origin socket: resolve (names only, on the host), check every
 * address against the private-address policy, then connect to a checked address itself. The socket
 * is connected here, never by a library that would resolve the name again: a second lookup could
 * answer differently (DNS rebinding).
 */
import { connect, type Socket } from "node:net";
import { ADDRESS_CLASS_WORDS, addressClass } from "./address-policy.js";
import { hostSyntax } from "./host-syntax.js";
import { parseIpLiteral } from "./ip-literal.js";
import { isMetadataName } from "./metadata.js";

/** Resolves a name to all its addresses. */
export type Lookup = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export type Destination =
  | { ok: true; addresses: string[] }
  | { ok: false; refused: boolean; status: 403 | 502; reason: string };

/** The addresses an allowed host may be reached at, or why it may not. */
export async function resolveDestination(
  host: string,
  policy: { allowPrivate: boolean; lookup: Lookup },
): Promise<Destination> {
  const syntax = hostSyntax(host);
  if (syntax.kind === "invalid") return { ok: false, refused: true, status: 403, reason: syntax.reason };
  let addresses: string[];
  if (syntax.kind === "ip") {
    addresses = [syntax.ip.address];
  } else {
    if (isMetadataName(syntax.name)) {
      return { ok: false, refused: true, status: 403, reason: `${syntax.name} is ${METADATA_REFUSAL}` };
    }
    let answers: Array<string | undefined>;
    try {
      // Canonical addresses only: anything else would make `net.connect` resolve it again.
      answers = (await policy.lookup(syntax.name)).map((a) => parseIpLiteral(a.address)?.address);
    } catch {
      answers = [];
    }
    if (answers.length === 0 || answers.includes(undefined)) {
      return { ok: false, refused: false, status: 502, reason: "name does not resolve" };
    }
    addresses = answers.filter((a) => a !== undefined);
  }
  for (const address of addresses) {
    const reason = addressRefusal(syntax.kind === "ip" ? undefined : syntax.name, address, policy);
    // One bad address refuses the name: a hostile record can mix a public address with 127.0.0.1.
    if (reason !== undefined) return { ok: false, refused: true, status: 403, reason };
  }
  return { ok: true, addresses };
}

const METADATA_REFUSAL = `${ADDRESS_CLASS_WORDS.metadata} (always refused, even with --allow-private)`;

function addressRefusal(
  name: string | undefined,
  address: string,
  policy: { allowPrivate: boolean },
): string | undefined {
  const kind = addressClass(address);
  if (kind === "public") return undefined;
  const what = name === undefined ? `${address} is` : `${name} resolves to ${address},`;
  // The cloud's metadata and credential services hand out the host's identity: never reached, not
  // with --allow-private, not as an IP literal listed exactly.
  if (kind === "metadata") return `${what} ${METADATA_REFUSAL}`;
  if (!policy.allowPrivate) return `${what} ${ADDRESS_CLASS_WORDS[kind]} (--allow-private would allow it)`;
  return undefined;
}

/**
 * Connects to the first of `addresses` that accepts, in order. Rejects with the last error.
 * `track` gets each socket as soon as it exists, so the caller can destroy it when cut short;
 * once `cancelled()` says so, no further address is tried.
 */
export async function connectOrigin(
  addresses: readonly string[],
  port: number,
  track: (socket: Socket) => void,
  cancelled: () => boolean,
): Promise<{ socket: Socket; address: string }> {
  let lastError: Error = new Error("no address");
  for (const address of addresses) {
    if (cancelled()) break;
    try {
      const socket = await new Promise<Socket>((resolve, reject) => {
        // Half-open like the client side, so each direction of a tunnel ends on its own.
        const socket = connect({ host: address, port, allowHalfOpen: true });
        track(socket);
        socket.once("connect", () => {
          socket.off("error", reject);
          resolve(socket);
        });
        socket.once("error", reject);
        socket.once("close", () => reject(new Error("closed before connecting")));
      });
      return { socket, address };
    } catch (error) {
      lastError = error as Error;
    }
  }
  throw lastError;
}
