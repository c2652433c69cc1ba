/**
 * An HTTPS origin for egress-bench, in its own process so its memory and CPU are not the gateway's.
 * argv: cert.pem key.pem. Prints its port, then serves `/small` (2 bytes) and `/big?bytes=N`
 * (N bytes, streamed with backpressure) until stdin closes.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:https";

const [certPath, keyPath] = process.argv.slice(2);
if (certPath === undefined || keyPath === undefined) throw new Error("usage: cert.pem key.pem");
const chunk = Buffer.alloc(64 * 1024, 120);

const server = createServer({ cert: readFileSync(certPath), key: readFileSync(keyPath) }, (req, res) => {
  const url = new URL(req.url ?? "/", "https://origin");
  if (url.pathname !== "/big") {
    res.end("ok");
    return;
  }
  let left = Number(url.searchParams.get("bytes") ?? "0");
  res.writeHead(200, { "content-length": String(left) });
  const pump = (): void => {
    while (left > 0) {
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      if (!res.write(piece)) {
        res.once("drain", pump);
        return;
      }
    }
    res.end();
  };
  pump();
});
server.keepAliveTimeout = 1000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${typeof address === "object" && address ? address.port : 0}\n`);
});
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
