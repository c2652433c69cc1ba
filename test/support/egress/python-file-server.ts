/**
 * An unmodified `python3 -m http.server` on 127.0.0.1 serving a directory with `allowed/` and a
 * file beside it, `secret`, whose content no request rule for `allowed/` may ever hand out; with a
 * TLS front (a byte pipe, so http.server reads the very request target the gateway sent) for the
 * hosts the gateway ends TLS for. http.server resolves a path with `posixpath.normpath` after
 * percent-decoding it: not the way the WHATWG URL parser does.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";

/** What `/secret` holds: it must never reach the sandbox. */
export const SECRET_FILE_TEXT = "TOP-SECRET-FILE-a81f3c";
/** What `/allowed/page` holds. */
export const ALLOWED_FILE_TEXT = "allowed page ok";

/** Targets that name `/allowed/…` to a prefix check and something else to some server. */
export const SNEAKY_TARGETS: readonly string[] = [
  "/allowed//../secret",
  "/allowed/x//../../secret",
  "/allowed/.//../secret",
  "/allowed/./../secret",
  "/allowed/../secret",
  "/allowed/%2e%2e/secret",
  "/allowed/%2E%2E/secret",
  "/allowed/.%2e/secret",
  "/allowed/%2e./secret",
  "/allowed/%2e%2e%2fsecret",
  "/allowed/..%2fsecret",
  "/allowed/..%2Fsecret",
  "/allowed/..%5csecret",
  "/allowed/..\\secret",
  "/allowed\\..\\secret",
  "/allowed/..;/secret",
  "/allowed/;x/../../secret",
  "/allowed;/../secret",
  "/allowed/%00/../../secret",
  "/allowed/..%00/secret",
  "/allowed/%252e%252e/secret",
  "/allowed/%u002e%u002e/secret",
  "/allowed/%c0%ae%c0%ae/secret",
  "/allowed/%ef%bc%8e%ef%bc%8e/secret",
  "/allowed/\u2025/secret",
  "/allowed/．．/secret",
  "//allowed/../secret",
  "/allowed/../secret#",
  "/allowed/#/../../secret",
  "/allowed/..#/secret",
  "/allowed/..?/secret",
  "/allowed%2f..%2fsecret",
  "/allowed/x/..",
  "/allowed/..",
  "/allowed/.",
  "/allowed//",
];

export interface PythonFileServer {
  /** http.server's own port (plain HTTP). */
  port: number;
  /** The TLS front's port. */
  tlsPort: number;
  /** The request lines http.server logged, in order ("GET /secret HTTP/1.1" 200 -). */
  log: () => string;
  close(): Promise<void>;
}

export async function startPythonFileServer(tls: { cert: string; key: string }): Promise<PythonFileServer> {
  const root = mkdtempSync(join(tmpdir(), "harness-http-server-"));
  mkdirSync(join(root, "allowed", "x"), { recursive: true });
  writeFileSync(join(root, "allowed", "page"), ALLOWED_FILE_TEXT);
  writeFileSync(join(root, "secret"), SECRET_FILE_TEXT);
  const child: ChildProcess = spawn(
    "python3",
    ["-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", root, "0"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (c: Buffer) => {
    log += c.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      const match = / port (\d+) /.exec(out);
      if (match?.[1] !== undefined) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`http.server exited (${code}): ${log}`)));
  });
  const sockets = new Set<Socket>();
  const front = createTlsServer(tls, (client) => {
    const upstream = connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  return {
    port,
    tlsPort: (front.address() as AddressInfo).port,
    log: () => log,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => front.close(() => resolve()));
      child.kill();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
