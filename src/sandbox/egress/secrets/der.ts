/**
 * The little of DER (X.690) that an X.509 certificate needs: tag-length-value, with the universal
 * types the certificate builder uses. Node has no certificate API that writes, only one that reads.
 */

/** One TLV: the tag byte, then the definite length, then the content. */
function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), lengthBytes(content.length), content]);
}

function lengthBytes(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export const sequence = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
export const octetString = (content: Buffer): Buffer => tlv(0x04, content);
export const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, "utf8"));
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0]));
/** `[n]` EXPLICIT, constructed. */
export const explicit = (n: number, content: Buffer): Buffer => tlv(0xa0 | n, content);
/** `[n]` IMPLICIT, primitive (GeneralName's dNSName is [2], iPAddress [7]; keyIdentifier [0]). */
export const implicit = (n: number, content: Buffer): Buffer => tlv(0x80 | n, content);

/** A non-negative INTEGER from its big-endian magnitude (a leading zero added when the top bit is set). */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start += 1;
  const trimmed = magnitude.subarray(start);
  const top = trimmed[0] ?? 0;
  return tlv(0x02, top & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export const smallInteger = (n: number): Buffer => unsignedInteger(Buffer.from([n]));

/** A BIT STRING of whole bytes (no unused bits). */
export const bitString = (content: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), content]));

/** The KeyUsage bit string: `bits` numbered as in RFC 5280 (0 = digitalSignature, 5 = keyCertSign). */
export function keyUsageBits(bits: readonly number[]): Buffer {
  let byte = 0;
  for (const bit of bits) byte |= 0x80 >> bit;
  let unused = 0;
  while (unused < 7 && (byte & (1 << unused)) === 0) unused += 1;
  return tlv(0x03, Buffer.from([unused, byte]));
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split(".").map(Number);
  const [first = 0, second = 0, ...rest] = arcs;
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const groups: number[] = [];
    for (let value = arc; ; value = Math.floor(value / 128)) {
      groups.unshift(value & 0x7f);
      if (value < 128) break;
    }
    for (let i = 0; i < groups.length - 1; i += 1) groups[i] = (groups[i] ?? 0) | 0x80;
    bytes.push(...groups);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime through 2049, GeneralizedTime after, both to the second in UTC (RFC 5280 §4.1.2.5). */
export function time(date: Date): Buffer {
  const iso = date.toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  if (date.getUTCFullYear() < 2050) return tlv(0x17, Buffer.from(digits.slice(2), "latin1"));
  return tlv(0x18, Buffer.from(digits, "latin1"));
}
