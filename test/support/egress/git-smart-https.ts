/**
 * A git server over HTTPS that needs a token: git's own http backend (git-http-backend, as CGI)
 * behind a small TLS server on loopback that answers 401 unless `Authorization: Basic` carries the
 * expected password. Pushes are accepted (REMOTE_USER is set once authenticated). It remembers every
 * Authorization header it saw, so a test can check which credential reached it.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BACKEND = "/usr/lib/git-core/git-http-backend";

export interface GitSmartHttps {
  port: number;
  /** Every Authorization header, in order ("" when none). */
  authorizations: string[];
  /** The bare repository on the host (read it with `git --git-dir`). */
  bare: string;
  close(): Promise<void>;
}

const GIT_ENV = {
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};

export async function startGitSmartHttps(
  tls: { cert: string; key: string },
  password: string,
): Promise<GitSmartHttps> {
  const root = mkdtempSync(join(tmpdir(), "harness-git-smart-"));
  const bare = join(root, "repo.git");
  execFileSync("git", ["init", "-q", "--bare", "-b", "main", bare], { env: GIT_ENV });
  const authorizations: string[] = [];
  const handler = (request: IncomingMessage, response: ServerResponse): void => {
    const authorization = request.headers.authorization ?? "";
    authorizations.push(authorization);
    const [scheme, encoded = ""] = authorization.split(" ");
    const pass = Buffer.from(encoded, "base64").toString().split(":").slice(1).join(":");
    if (scheme !== "Basic" || pass !== password) {
      request.resume();
      response.writeHead(401, { "www-authenticate": 'Basic realm="git"', "content-length": 0 }).end();
      return;
    }
    const url = new URL(request.url ?? "/", "https://git.invalid");
    const cgi = spawn(BACKEND, [], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        REMOTE_USER: "pusher",
        REQUEST_METHOD: request.method ?? "GET",
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: request.headers["content-type"] ?? "",
        ...(request.headers["content-encoding"]
          ? { HTTP_CONTENT_ENCODING: request.headers["content-encoding"] }
          : {}),
        GIT_COMMITTER_NAME: "harness tests",
        GIT_COMMITTER_EMAIL: "tests@example.org",
      },
      stdio: ["pipe", "pipe", "ignore"],
    });
    request.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headerDone = false;
    cgi.stdout.on("data", (chunk: Buffer) => {
      if (headerDone) {
        response.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      headerDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      response.writeHead(status, headers);
      response.write(head.subarray(end + 4));
    });
    cgi.on("close", () => response.end());
  };
  const server = createServer(tls, handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => {
        rmSync(root, { recursive: true, force: true });
        resolve();
      });
    });
  return { port: (server.address() as AddressInfo).port, authorizations, bare, close };
}
