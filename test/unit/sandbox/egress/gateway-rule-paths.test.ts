/**
 * Adversarial: `--allow-request GET@HOST/allowed/` in front of an unmodified `python3 -m http.server`
 * whose `/secret` sits beside `allowed/`. Each request target is sent raw (over the terminated TLS
 * connection, and as a plain-HTTP proxy request); judged from the host: http.server never hands out
 * `/secret`, and every target that a server could read another way than the gateway judged it is
 * refused by the gateway before it reaches the origin.
 */
import { connect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunCertificateAuthority } from "../../../../src/sandbox/egress/secrets/run-ca.js";
import {
  ALLOWED_FILE_TEXT,
  type PythonFileServer,
  SECRET_FILE_TEXT,
  SNEAKY_TARGETS,
  startPythonFileServer,
} from "../../../support/egress/python-file-server.js";
import { startGateway, type TestGateway } from "./gateway-fixture.js";
import { runCa } from "./secrets/secrets-fixture.js";

const FILES = "example.org";

/** One raw request over a fresh connection; resolves with everything that came back. */
async function rawExchange(
  open: () => import("node:net").Socket,
  requestLine: string,
  host: string,
): Promise<string> {
  const socket = open();
  socket.on("error", () => {});
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(Buffer.from(`${requestLine}\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, "utf8"));
  await closed;
  return Buffer.concat(chunks).toString("latin1");
}

describe("adversarial: --allow-request forwards only the path it judged", { timeout: 60_000 }, () => {
  const originCa = new RunCertificateAuthority();
  let files: PythonFileServer;
  let gw: TestGateway;
  let ca: string;

  beforeAll(async () => {
    const leaf = originCa.leafFor(FILES);
    files = await startPythonFileServer({ cert: leaf.certPem, key: leaf.keyPem });
    gw = await startGateway({
      allowHosts: [`${FILES}:${files.tlsPort},${files.port}`],
      requestRules: [`GET@${FILES}:${files.tlsPort},${files.port}/allowed/`],
      upstreamCa: [originCa.certPem],
    });
    ca = runCa(gw);
  });
  afterAll(async () => {
    await gw[Symbol.asyncDispose]();
    await files.close();
  });

  /** CONNECT, then TLS trusting the run's CA: the socket the raw request goes over. */
  async function terminated(): Promise<import("node:net").Socket> {
    const raw = connect(gw.gateway.socketPath);
    await new Promise((resolve) => raw.once("connect", resolve));
    raw.write(`CONNECT ${FILES}:${files.tlsPort} HTTP/1.1\r\nHost: ${FILES}:${files.tlsPort}\r\n\r\n`);
    await new Promise((resolve) => raw.once("data", resolve));
    const secure = tlsConnect({ socket: raw, servername: FILES, ca });
    await new Promise((resolve, reject) => secure.once("secureConnect", resolve).once("error", reject));
    return secure;
  }

  it("control: the allowed file is served both ways", async () => {
    const secure = await terminated();
    expect(await rawExchange(() => secure, "GET /allowed/page HTTP/1.1", FILES)).toContain(ALLOWED_FILE_TEXT);
    const plain = await rawExchange(
      () => connect(gw.gateway.socketPath),
      `GET http://${FILES}:${files.port}/allowed/page HTTP/1.1`,
      FILES,
    );
    expect(plain).toContain(ALLOWED_FILE_TEXT);
  });

  it("finding 10: no target serves /secret, and each one the origin could read otherwise is refused", async () => {
    const served: string[] = [];
    const passed: string[] = [];
    for (const target of SNEAKY_TARGETS) {
      const secure = await terminated();
      const viaTls = await rawExchange(() => secure, `GET ${target} HTTP/1.1`, FILES);
      const viaPlain = await rawExchange(
        () => connect(gw.gateway.socketPath),
        `GET http://${FILES}:${files.port}${target} HTTP/1.1`,
        FILES,
      );
      for (const [how, answer] of [
        ["tls", viaTls],
        ["plain", viaPlain],
      ] as const) {
        if (answer.includes(SECRET_FILE_TEXT)) served.push(`${how} ${target}`);
        // The gateway's own refusals are 403 (a rule) or 400 (a target it cannot read).
        if (!/^HTTP\/1\.1 40[03] /.test(answer)) passed.push(`${how} ${target}: ${answer.split("\r\n")[0]}`);
      }
    }
    expect(served).toEqual([]);
    expect(passed).toEqual([]);
    const servedByOrigin = files.log().match(/"GET [^"]*" 200/g) ?? [];
    expect(servedByOrigin.filter((line) => !line.startsWith('"GET /allowed/page '))).toEqual([]);
  });

  it("an absolute-form target inside the terminated connection is refused", async () => {
    const secure = await terminated();
    const answer = await rawExchange(
      () => secure,
      `GET https://${FILES}:${files.tlsPort}/allowed/../secret HTTP/1.1`,
      FILES,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).not.toContain(SECRET_FILE_TEXT);
  });
});
