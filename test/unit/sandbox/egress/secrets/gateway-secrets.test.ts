/**
 * The gateway with `--secret`: TLS ended for the secret's host with the run's CA, the placeholder
 * swapped for the value on the way there only, refused (403 naming the secret, never the value) on
 * the way anywhere else, and the value taken back out of what the origin answers.
 */
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunCertificateAuthority } from "../../../../../src/sandbox/egress/secrets/run-ca.js";
import { SecretValue } from "../../../../../src/sandbox/egress/secrets/secret-grant.js";
import { startGateway, type TestGateway } from "../gateway-fixture.js";
import { tunnel } from "./secrets-fixture.js";

const VALUE = "s3cr3t-VALUE-0123456789";

interface Seen {
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** An origin that records each request and echoes its Authorization header (gzip when asked by path). */
async function echoingOrigin(tls?: {
  cert: string;
  key: string;
}): Promise<{ port: number; seen: Seen[]; close: () => void }> {
  const seen: Seen[] = [];
  const handler = (req: IncomingMessage, res: import("node:http").ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() });
      const echo = `auth=${req.headers.authorization ?? ""} url=${req.url}`;
      if (req.url?.startsWith("/gzip")) {
        const body = gzipSync(echo);
        res
          .writeHead(200, { "content-encoding": "gzip", "content-length": body.length, "x-echo": echo })
          .end(body);
      } else {
        res.writeHead(200, { "content-length": Buffer.byteLength(echo), "x-echo": echo }).end(echo);
      }
    });
  };
  const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    seen,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** One request over `connection`; resolves with the status, headers and body. */
function send(
  options: { path: string; method?: string; headers?: Record<string, string>; body?: string },
  createConnection: () => Socket,
): Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        createConnection,
        path: options.path,
        method: options.method ?? "GET",
        headers: options.headers ?? {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

describe("the gateway with a secret", () => {
  const originCa = new RunCertificateAuthority();
  let api: Awaited<ReturnType<typeof echoingOrigin>>;
  let other: Awaited<ReturnType<typeof echoingOrigin>>;
  let plain: Awaited<ReturnType<typeof echoingOrigin>>;
  let gw: TestGateway;
  let placeholder: string;
  let caPem: string;

  beforeAll(async () => {
    const leaf = originCa.leafFor("api.example.org");
    api = await echoingOrigin({ cert: leaf.certPem, key: leaf.keyPem });
    other = await echoingOrigin({
      cert: originCa.leafFor("example.org").certPem,
      key: originCa.leafFor("example.org").keyPem,
    });
    plain = await echoingOrigin();
    gw = await startGateway({
      allowHosts: [`example.org:${other.port},${plain.port}`],
      secrets: [
        {
          name: "API_TOKEN",
          host: `api.example.org:${api.port}`,
          inBody: false,
          value: new SecretValue("API_TOKEN", VALUE),
        },
      ],
      upstreamCa: [originCa.certPem],
    });
    placeholder = gw.gateway.secretEnv()[0]?.split("=")[1] ?? "";
    const files = gw.gateway.trustFiles;
    if (files === undefined) throw new Error("no trust files");
    caPem = readFileSync(join(gw.dir, "gw", files.ca), "utf8");
    expect(readFileSync(join(gw.dir, "gw", files.bundle), "utf8")).toContain(caPem);
  });
  afterAll(async () => {
    await gw[Symbol.asyncDispose]();
    api.close();
    other.close();
    plain.close();
  });

  it("puts the value into a Bearer header on the way to its host, and takes it back out of the answer", async () => {
    expect(placeholder).toMatch(/^harness-secret-API_TOKEN-/);
    const secure = await tunnel(
      gw.gateway.socketPath,
      `api.example.org:${api.port}`,
      "api.example.org",
      caPem,
    );
    const answer = await send(
      { path: "/v1/user", headers: { authorization: `Bearer ${placeholder}` } },
      () => secure,
    );
    expect(api.seen.at(-1)?.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`auth=Bearer ${placeholder} url=/v1/user`);
    expect(answer.headers["x-echo"]).toBe(`auth=Bearer ${placeholder} url=/v1/user`);
    expect(JSON.stringify(gw.records)).not.toContain(VALUE);
    expect(
      gw.records.some((r) => r.secrets?.includes("API_TOKEN") && r.method === "GET" && r.status === 200),
    ).toBe(true);
  });

  it("swaps Basic credentials and the query, and masks a gzip echo", async () => {
    const secure = await tunnel(
      gw.gateway.socketPath,
      `api.example.org:${api.port}`,
      "api.example.org",
      caPem,
    );
    const basic = Buffer.from(`x-access-token:${placeholder}`).toString("base64");
    const answer = await send(
      {
        path: `/gzip?access_token=${placeholder}`,
        headers: { authorization: `Basic ${basic}`, "accept-encoding": "gzip" },
      },
      () => secure,
    );
    const seen = api.seen.at(-1);
    expect(seen?.url).toBe(`/gzip?access_token=${VALUE}`);
    expect(Buffer.from((seen?.headers.authorization ?? "").slice(6), "base64").toString()).toBe(
      `x-access-token:${VALUE}`,
    );
    expect(answer.body).not.toContain(VALUE);
    expect(answer.body).toContain(placeholder);
  });

  it("refuses the placeholder to another host, in a header, the URL, base64 or a body, without the value", async () => {
    const attempts: Array<{
      path: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
    }> = [
      { path: "/", headers: { "x-token": placeholder } },
      { path: `/?q=${placeholder}` },
      { path: `/${Buffer.from(`!${placeholder}`).toString("base64url")}` },
      { path: "/", method: "POST", headers: { "content-type": "text/plain" }, body: `data ${placeholder}` },
    ];
    for (const attempt of attempts) {
      const before = other.seen.length;
      const secure = await tunnel(
        gw.gateway.socketPath,
        `example.org:${other.port}`,
        "example.org",
        originCa.certPem,
      );
      // example.org has no secret: its tunnel is blind, so the placeholder reaches it (and is useless there).
      await send(attempt, () => secure);
      expect(other.seen.length).toBe(before + 1);
      const direct = await send({ ...attempt, path: `http://example.org:${plain.port}${attempt.path}` }, () =>
        connect(gw.gateway.socketPath),
      );
      expect(direct.status).toBe(403);
      expect(direct.body).toContain("API_TOKEN");
      expect(direct.body).toContain("example.org");
      expect(direct.body).not.toContain(VALUE);
    }
    expect(plain.seen.every((s) => !JSON.stringify(s).includes(placeholder))).toBe(true);
    expect(gw.call.denied.filter((d) => d.reason.includes("API_TOKEN")).length).toBe(attempts.length);
    const refused = gw.records.filter((r) => !r.allowed && r.secrets?.includes("API_TOKEN"));
    expect(refused.length).toBe(attempts.length);
    expect(JSON.stringify(gw.records)).not.toContain(VALUE);
    for (const seen of [...other.seen, ...plain.seen]) expect(JSON.stringify(seen)).not.toContain(VALUE);
  });

  it("does not swap the value into a body unless asked", async () => {
    const secure = await tunnel(
      gw.gateway.socketPath,
      `api.example.org:${api.port}`,
      "api.example.org",
      caPem,
    );
    await send({ path: "/post", method: "POST", body: `token=${placeholder}` }, () => secure);
    expect(api.seen.at(-1)?.body).toBe(`token=${placeholder}`);
  });

  it("drops a terminated client that never finishes its handshake, after the idle time", async () => {
    await using idle = await startGateway({
      idleMs: 200,
      secrets: [
        {
          name: "API_TOKEN",
          host: `api.example.org:${api.port}`,
          inBody: false,
          value: new SecretValue("API_TOKEN", VALUE),
        },
      ],
    });
    const raw = connect(idle.gateway.socketPath);
    await new Promise((resolve) => raw.once("connect", resolve));
    raw.write(`CONNECT api.example.org:${api.port} HTTP/1.1\r\n\r\n`);
    raw.on("data", () => {});
    await new Promise((resolve) => raw.once("close", resolve));
    expect(raw.destroyed).toBe(true);
  });

  it("refuses an origin it cannot verify (502), and a client that does not trust the run's CA fails", async () => {
    await using strict = await startGateway({
      secrets: [
        {
          name: "API_TOKEN",
          host: `api.example.org:${api.port}`,
          inBody: false,
          value: new SecretValue("API_TOKEN", VALUE),
        },
      ],
    });
    const ca = readFileSync(join(strict.dir, "gw", strict.gateway.trustFiles?.ca ?? ""), "utf8");
    const secure = await tunnel(
      strict.gateway.socketPath,
      `api.example.org:${api.port}`,
      "api.example.org",
      ca,
    );
    const before = api.seen.length;
    const answer = await send(
      { path: "/", headers: { authorization: `Bearer ${strict.gateway.secretEnv()[0]?.split("=")[1]}` } },
      () => secure,
    );
    expect(answer.status).toBe(502);
    expect(api.seen.length).toBe(before);
    await expect(
      tunnel(strict.gateway.socketPath, `api.example.org:${api.port}`, "api.example.org", originCa.certPem),
    ).rejects.toThrow();
  });
});

describe("the gateway with request rules", () => {
  const originCa = new RunCertificateAuthority();

  it("ends TLS for a ruled host and lets through only what a rule allows, over TLS and plain HTTP", async () => {
    const leaf = originCa.leafFor("api.example.org");
    const api = await echoingOrigin({ cert: leaf.certPem, key: leaf.keyPem });
    const plain = await echoingOrigin();
    try {
      await using gw = await startGateway({
        allowHosts: [`api.example.org:${api.port},${plain.port}`],
        requestRules: [`GET,HEAD@api.example.org:${api.port},${plain.port}/v1/`],
        upstreamCa: [originCa.certPem],
      });
      expect(gw.gateway.secretEnv()).toEqual([]);
      const ca = readFileSync(join(gw.dir, "gw", gw.gateway.trustFiles?.ca ?? ""), "utf8");
      const tls = () => tunnel(gw.gateway.socketPath, `api.example.org:${api.port}`, "api.example.org", ca);
      expect((await send({ path: "/v1/users" }, await tls().then((s) => () => s))).status).toBe(200);
      const post = await send(
        { path: "/v1/users", method: "POST", body: "x" },
        await tls().then((s) => () => s),
      );
      expect(post.status).toBe(403);
      expect(post.body).toContain(
        "POST /v1/users: no request rule allows it (rules: GET,HEAD@api.example.org",
      );
      const dotDot = await send({ path: "/v1/%2e%2e/admin" }, await tls().then((s) => () => s));
      expect(dotDot.status).toBe(403);
      expect(api.seen.map((s) => s.url)).toEqual(["/v1/users"]);
      const plainGet = await send({ path: `http://api.example.org:${plain.port}/v2/x` }, () =>
        connect(gw.gateway.socketPath),
      );
      expect(plainGet.status).toBe(403);
      expect(plain.seen).toEqual([]);
      expect(gw.call.denied.map((d) => d.reason)).toHaveLength(3);
    } finally {
      api.close();
      plain.close();
    }
  });

  it("refuses a rule for a host that is not allowed", async () => {
    await expect(startGateway({ requestRules: ["GET@api.example.org/v1/"] })).rejects.toThrow(/not allowed/);
  });
});
