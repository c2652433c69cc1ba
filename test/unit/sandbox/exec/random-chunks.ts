/** Seeded chunkings of a byte stream, for readers that must not care where a chunk ends. */

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `data` cut into consecutive pieces of 1..maxSize bytes. */
export function randomChunks(data: Buffer, random: () => number, maxSize: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < data.length; ) {
    const size = 1 + Math.floor(random() * maxSize);
    chunks.push(data.subarray(at, at + size));
    at += size;
  }
  return chunks;
}
