/**
 * The certificate authority of one run: made in memory when the gateway starts, its private key
 * never written anywhere (the sandbox gets only its certificate, to trust), and a leaf certificate
 * for each host the gateway terminates TLS for. ECDSA P-256 with SHA-256 throughout: fast to make,
 * and accepted by OpenSSL, GnuTLS (Debian's git) and Node alike.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { isIP } from "node:net";
import {
  bitString,
  boolean,
  explicit,
  implicit,
  keyUsageBits,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from "./der.js";

const ECDSA_WITH_SHA256 = sequence(oid("1.2.840.10045.4.3.2"));
const COMMON_NAME = "2.5.4.3";
const HOUR_MS = 3_600_000;
/** Longer than any run; the key dies with the process anyway. */
const VALIDITY_MS = 30 * 24 * HOUR_MS;

/** A leaf certificate and its key, as `tls.createSecureContext` takes them. */
export interface LeafCertificate {
  certPem: string;
  /** PKCS#8 PEM (tls takes no KeyObject); in this process's memory only. */
  keyPem: string;
}

export class RunCertificateAuthority {
  /** The CA's certificate (PEM): what the sandbox is told to trust. */
  readonly certPem: string;
  readonly #key: KeyObject;
  readonly #name: Buffer;
  readonly #keyId: Buffer;
  readonly #leafKey: { privateKey: KeyObject; spki: Buffer; pem: string };
  readonly #leaves = new Map<string, LeafCertificate>();
  readonly #notBefore: Date;
  readonly #notAfter: Date;

  constructor(now: Date = new Date()) {
    const ca = newKey();
    this.#key = ca.privateKey;
    this.#keyId = keyIdentifier(ca.spki);
    this.#name = distinguishedName(`harness run CA ${randomBytes(6).toString("hex")}`);
    // An hour back: a container whose clock is a little behind still accepts them.
    this.#notBefore = new Date(now.getTime() - HOUR_MS);
    this.#notAfter = new Date(now.getTime() + VALIDITY_MS);
    const leafKey = newKey();
    this.#leafKey = {
      ...leafKey,
      pem: leafKey.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    };
    const extensions = [
      extension("2.5.29.19", true, sequence(boolean(true), smallInteger(0))),
      extension("2.5.29.15", true, keyUsageBits([5, 6])),
      extension("2.5.29.14", false, octetString(this.#keyId)),
    ];
    this.certPem = this.#issue(this.#name, ca.spki, extensions);
  }

  /** The certificate for `host` (a DNS name, or an IP literal without brackets), made once. */
  leafFor(host: string): LeafCertificate {
    const known = this.#leaves.get(host);
    if (known !== undefined) return known;
    const family = isIP(host);
    const altName =
      family === 0 ? implicit(2, Buffer.from(host, "latin1")) : implicit(7, ipBytes(host, family));
    const extensions = [
      extension("2.5.29.19", true, sequence()),
      extension("2.5.29.15", true, keyUsageBits([0])),
      extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1"))),
      extension("2.5.29.17", false, sequence(altName)),
      extension("2.5.29.14", false, octetString(keyIdentifier(this.#leafKey.spki))),
      extension("2.5.29.35", false, sequence(implicit(0, this.#keyId))),
    ];
    const leaf = {
      certPem: this.#issue(distinguishedName(host), this.#leafKey.spki, extensions),
      keyPem: this.#leafKey.pem,
    };
    this.#leaves.set(host, leaf);
    return leaf;
  }

  #issue(subject: Buffer, spki: Buffer, extensions: Buffer[]): string {
    const serial = randomBytes(16);
    serial[0] = (serial[0] ?? 0) & 0x7f;
    const tbs = sequence(
      explicit(0, smallInteger(2)),
      unsignedInteger(serial),
      ECDSA_WITH_SHA256,
      this.#name,
      sequence(time(this.#notBefore), time(this.#notAfter)),
      subject,
      spki,
      explicit(3, sequence(...extensions)),
    );
    const signature = sign("sha256", tbs, this.#key);
    const der = sequence(tbs, ECDSA_WITH_SHA256, bitString(signature));
    const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
    return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
  }
}

function newKey(): { privateKey: KeyObject; spki: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return { privateKey, spki: publicKey.export({ type: "spki", format: "der" }) };
}

/** RFC 5280 §4.2.1.2 method 1 in spirit: a hash of the key; any unique 20 bytes will do. */
function keyIdentifier(spki: Buffer): Buffer {
  return createHash("sha1").update(spki).digest();
}

function distinguishedName(commonName: string): Buffer {
  // A CN is at most 64 characters (ub-common-name); a longer host name lives in the SAN only.
  return sequence(set(sequence(oid(COMMON_NAME), utf8String(commonName.slice(0, 64)))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? sequence(oid(id), boolean(true), octetString(value))
    : sequence(oid(id), octetString(value));
}

function ipBytes(address: string, family: number): Buffer {
  if (family === 4) return Buffer.from(address.split(".").map(Number));
  const [head = "", tail = ""] = address.split("::");
  const groups = (text: string) => (text === "" ? [] : text.split(":"));
  const left = groups(head);
  const right = address.includes("::") ? groups(tail) : [];
  const middle = new Array(8 - left.length - right.length).fill("0");
  const all = address.includes("::") ? [...left, ...middle, ...right] : left;
  return Buffer.from(all.flatMap((g) => [Number.parseInt(g, 16) >> 8, Number.parseInt(g, 16) & 0xff]));
}
