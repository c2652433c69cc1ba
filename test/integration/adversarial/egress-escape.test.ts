/**
 * Adversarial: a command in allowlist mode trying every way around the gateway. Each refusal is
 * checked from inside (the command's failure) and from the host (the origin saw nothing, the
 * gateway recorded a denial). Origins listen on the host's loopback only; names resolve to loopback
 * through the injected resolver; the only non-loopback address tried is TEST-NET-3, and only after
 * the routing table showed there is no route.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import type { DockerSandboxOptions } from "../../../src/sandbox/docker/docker-sandbox-options.js";
import { SANDBOX_DEFAULTS } from "../../../src/sandbox/sandbox-request.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";
import {
  collectRecords,
  eventually,
  loopbackLookup,
  ORIGIN,
  type Origin,
  pythonGet,
  useOrigins,
} from "../egress-fixture.js";

/**
 * Talks to the relay directly, as a hostile client would: sends argv[1] (with \r\n escapes) on one
 * connection, half-closes unless argv[2] is "open", and prints what came back (until the gateway
 * closes, or 3 s of silence).
 */
const RAW_CLIENT = String.raw`
import os, socket, sys
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", port), timeout=3)
s.sendall(sys.argv[1].encode().decode("unicode_escape").encode("latin1"))
if sys.argv[2:] != ["open"]:
    s.shutdown(socket.SHUT_WR)
out = b""
try:
    while True:
        d = s.recv(65536)
        if not d: break
        out += d
except OSError as e:
    out += ("\n<" + type(e).__name__ + ">").encode()
sys.stdout.write(out.decode("latin1").replace("\r", ""))
`;

function raw(payload: string, how: "half-close" | "open" = "half-close"): string {
  return `python3 - '${payload}' ${how} <<'EOF'\n${RAW_CLIENT}\nEOF`;
}

describe.skipIf(skipDocker)("adversarial: getting around the egress gateway", () => {
  const shared = useOrigins();
  let origin: Origin;
  let tlsOrigin: Origin;
  beforeAll(() => {
    ({ origin, tlsOrigin } = shared);
  });

  /** Allows the plain origin's port only (the TLS origin's port is "another port" on an allowed name). */
  function options(workspace: string, more: Partial<DockerSandboxOptions> = {}): DockerSandboxOptions {
    return {
      workspace,
      removeOnStop: true,
      egress: { allowHosts: [`${ORIGIN}:${origin.port}`], allowPrivate: true },
      egressLookup: loopbackLookup,
      ...more,
    };
  }

  it("refuses a host not on the list with a 403 that names the host and the flag, and records it", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const records = collectRecords(sandbox);
    const seen = origin.connections;
    const result = await sandbox.exec(pythonGet(`http://other.example.org:${origin.port}/x`), {
      callId: "c1",
    });
    expect(result.stdout).toMatch(/^STATUS 403\n/);
    expect(result.stdout).toContain(`other.example.org:${origin.port}`);
    expect(result.stdout).toContain("--allow-host");
    expect(result.egressDenied).toEqual([
      expect.objectContaining({ host: "other.example.org", port: origin.port }),
    ]);
    expect(records).toEqual([
      expect.objectContaining({ callId: "c1", host: "other.example.org", allowed: false, status: 403 }),
    ]);
    // The same loopback server serves the allowed name: it saw nothing, though it would have answered.
    expect(origin.connections).toBe(seen);
  });

  it("refuses IP literals that are not listed, by CONNECT and by absolute URL", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const records = collectRecords(sandbox);
    const seen = origin.connections;
    // NO_PROXY sends 127.0.0.1 straight to the container's own loopback; unset, it goes to the gateway.
    const viaUrl = await sandbox.exec(
      `env -u NO_PROXY -u no_proxy ${pythonGet(`http://127.0.0.1:${origin.port}/`)}`,
    );
    expect(viaUrl.stdout).toMatch(/^STATUS 403\n/);
    const viaConnect = await sandbox.exec(raw(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\\r\\n\\r\\n`));
    expect(viaConnect.stdout).toMatch(/^HTTP\/1\.1 403 /);
    expect(viaConnect.egressDenied?.[0]).toMatchObject({ host: "127.0.0.1", port: origin.port });
    await eventually(() => records.length >= 2);
    expect(records.every((r) => !r.allowed)).toBe(true);
    expect(origin.connections).toBe(seen);
  });

  it("refuses an allowed name that resolves to a private address without allowPrivate", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(
      options(ws.path, { egress: { allowHosts: [`${ORIGIN}:${origin.port}`] } }),
    );
    const records = collectRecords(sandbox);
    const seen = origin.connections;
    const result = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/`));
    expect(result.stdout).toMatch(/^STATUS 403\n/);
    expect(result.stdout).toContain("--allow-private");
    expect(result.egressDenied).toEqual([
      expect.objectContaining({ host: ORIGIN, reason: expect.stringContaining("--allow-private") }),
    ]);
    await eventually(() => records.length > 0);
    expect(records[0]).toMatchObject({ host: ORIGIN, allowed: false });
    expect(origin.connections).toBe(seen);
  });

  it("refuses a port the entry does not name", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const records = collectRecords(sandbox);
    const seen = tlsOrigin.connections;
    const result = await sandbox.exec(pythonGet(`https://${ORIGIN}:${tlsOrigin.port}/`));
    expect(result.stdout).toMatch(/^(STATUS 403|ERROR .*403)/);
    expect(result.egressDenied).toEqual([expect.objectContaining({ host: ORIGIN, port: tlsOrigin.port })]);
    expect(records).toEqual([expect.objectContaining({ method: "CONNECT", allowed: false, status: 403 })]);
    expect(tlsOrigin.connections).toBe(seen);
  });

  it("has no DNS inside the sandbox: lookups fail, at once", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const records = collectRecords(sandbox);
    const result = await sandbox.exec(
      `getent hosts ${ORIGIN}; echo "getent $?"
python3 -c "
import socket
try:
    print(socket.getaddrinfo('${ORIGIN}', 80))
except OSError as e:
    print('gaierror', type(e).__name__)
"`,
      { timeoutMs: 30_000 },
    );
    // No resolver to wait for: both fail rather than run into the 30 s timeout.
    expect(result.timedOut).toBe(false);
    expect(result.stdout).toBe("getent 2\ngaierror gaierror\n");
    expect(records).toEqual([]);
  });

  it("has no route around the proxy: the host's loopback is not the container's, and the rest is unreachable", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const seen = origin.connections;
    const probe = `
import errno, socket, sys
with open("/proc/net/route") as f:
    routes = [l for l in f.read().splitlines()[1:] if l.strip()]
print("routes", len(routes))
if routes:
    sys.exit("a route exists: not probing a non-loopback address")
for host, port in (("127.0.0.1", ${origin.port}), ("203.0.113.1", 80)):
    s = socket.socket(); s.settimeout(5)
    try:
        s.connect((host, port)); print(host, "CONNECTED")
    except OSError as e:
        print(host, errno.errorcode.get(e.errno))
`;
    const result = await sandbox.exec(`python3 - <<'EOF'\n${probe}\nEOF`);
    expect(result.stdout).toBe("routes 0\n127.0.0.1 ECONNREFUSED\n203.0.113.1 ENETUNREACH\n");
    expect(origin.connections).toBe(seen);
  });

  it("refuses forged CONNECTs sent to the relay by hand, whatever the Host header says", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const records = collectRecords(sandbox);
    const seenTls = tlsOrigin.connections;
    const seen = origin.connections;
    const allowed = `${ORIGIN}:${origin.port}`;
    for (const request of [
      `CONNECT evil.example.com:443 HTTP/1.1\\r\\nHost: ${allowed}\\r\\n\\r\\n`,
      `CONNECT ${allowed}@evil.example.com:443 HTTP/1.1\\r\\nHost: ${allowed}\\r\\n\\r\\n`,
      `CONNECT ${ORIGIN}:${tlsOrigin.port} HTTP/1.1\\r\\nHost: ${allowed}\\r\\n\\r\\n`,
      `CONNECT evil.example.com:${origin.port} HTTP/1.0\\r\\n\\r\\n`,
    ]) {
      const result = await sandbox.exec(raw(request));
      expect(result.stdout, request).toMatch(/^HTTP\/1\.[01] 4[0-9][0-9] /);
      expect(result.stdout, request).not.toContain(" 200 ");
    }
    await eventually(() => records.length >= 4);
    expect(records.filter((r) => r.allowed)).toEqual([]);
    expect(tlsOrigin.connections).toBe(seenTls);
    expect(origin.connections).toBe(seen);
  });

  it("checks every request on a keep-alive connection: a refused one smuggled after an allowed one is refused", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const records = collectRecords(sandbox);
    const before = origin.paths.length;
    const seenTls = tlsOrigin.connections;
    const allowed = `${ORIGIN}:${origin.port}`;
    const other = `other.example.org:${origin.port}`;
    const smuggledGet = await sandbox.exec(
      raw(
        `GET http://${allowed}/a HTTP/1.1\\r\\nHost: ${allowed}\\r\\n\\r\\n` +
          `GET http://${other}/b HTTP/1.1\\r\\nHost: ${allowed}\\r\\n\\r\\n`,
        // Open: Node's HTTP server drops pending requests of a client that half-closes.
        "open",
      ),
    );
    expect(smuggledGet.stdout).toMatch(/^HTTP\/1\.1 200 [\s\S]*origin-ok \/a[\s\S]*HTTP\/1\.1 403 /);
    expect(smuggledGet.stdout).not.toContain("origin-ok /b");
    const smuggledConnect = await sandbox.exec(
      raw(
        `GET http://${allowed}/c HTTP/1.1\\r\\nHost: ${allowed}\\r\\n\\r\\n` +
          `CONNECT ${ORIGIN}:${tlsOrigin.port} HTTP/1.1\\r\\nHost: ${allowed}\\r\\n\\r\\n`,
        "open",
      ),
    );
    expect(smuggledConnect.stdout).toContain("HTTP/1.1 403 ");
    expect(smuggledConnect.stdout).not.toMatch(/ 200 Connection established/i);
    await eventually(() => records.some((r) => r.host === "other.example.org") && records.length >= 3);
    expect(records.filter((r) => !r.allowed).map((r) => `${r.host}:${r.port}`)).toEqual([
      other,
      `${ORIGIN}:${tlsOrigin.port}`,
    ]);
    // The origin (which would serve any name) got allowed requests only; the TLS origin nothing.
    expect(origin.paths.slice(before).filter((p) => p !== "/c")).toEqual(["/a"]);
    expect(tlsOrigin.connections).toBe(seenTls);
  });

  it("keeps the sandbox from writing the gateway's socket directory", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const result = await sandbox.exec(
      'cd /run/harness-egress && for s in *.sock; do rm -f "$s" 2>&1; done; touch x 2>&1; mkfifo y 2>&1; ln -s / z 2>&1; ls',
    );
    expect(result.stdout.match(/Read-only file system/g)?.length).toBe(4);
    expect(result.stdout.trim().split("\n").at(-1)).toMatch(/^[0-9]+-[0-9a-f]+\.sock$/);
    const still = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/still`));
    expect(still.stdout).toBe("STATUS 200\norigin-ok /still\n");
  });

  it("survives a thousand parallel tunnels from inside: the host stays responsive and the gateway serves again", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(
      options(ws.path, {
        egress: {
          allowHosts: [`${ORIGIN}:${origin.port}`, `${ORIGIN}:${tlsOrigin.port}`],
          allowPrivate: true,
        },
        egressIdleMs: 3_000,
      }),
    );
    const records = collectRecords(sandbox);
    const flood = `
import os, selectors, socket, time
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
req = b"CONNECT ${ORIGIN}:${tlsOrigin.port} HTTP/1.1\\r\\n\\r\\n"
sel = selectors.DefaultSelector(); socks = []
for _ in range(1000):
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    sel.register(s, selectors.EVENT_WRITE, b""); socks.append(s)
status = {}; open_ = len(socks); deadline = time.monotonic() + 60
while open_ and time.monotonic() < deadline:
    for key, ev in sel.select(1):
        s = key.fileobj
        if ev & selectors.EVENT_WRITE:
            try: s.send(req)
            except OSError: pass
            sel.modify(s, selectors.EVENT_READ, b""); continue
        try: d = s.recv(4096)
        except OSError: d = b""
        if key.data == b"" and d:
            code = d.split(b" ")[1].decode() if d.startswith(b"HTTP/") else "junk"
            status[code] = status.get(code, 0) + 1
            sel.modify(s, selectors.EVENT_READ, b"seen")
        if not d:
            if key.data == b"": status["closed"] = status.get("closed", 0) + 1
            sel.unregister(s); s.close(); open_ -= 1
print(sorted(status.items()), "left", open_)
`;
    const result = await sandbox.exec(`python3 - <<'EOF'\n${flood}\nEOF`, { timeoutMs: 90_000 });
    const [summary = ""] = result.stdout.split("\n");
    const counts = Object.fromEntries(
      [...summary.matchAll(/\('([a-z0-9]+)', ([0-9]+)\)/g)].map((m): [string, number] => [
        m[1] ?? "",
        Number(m[2]),
      ]),
    );
    expect(summary).toMatch(/left 0$/);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    expect(total).toBe(1000);
    // At most egressMaxConnections tunnels (they all stay until idle): the rest refused or closed, none hung.
    expect(counts["200"] ?? 0).toBeGreaterThan(0);
    expect(counts["200"] ?? 0).toBeLessThanOrEqual(SANDBOX_DEFAULTS.egressMaxConnections);
    const again = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/after-flood`));
    expect(again.stdout).toBe("STATUS 200\norigin-ok /after-flood\n");
    expect(records.some((r) => !r.allowed && /too many connections/.test(r.reason ?? ""))).toBe(true);
  });

  it("closes a tunnel that never sends (idle), and a connection that never finishes its request", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(
      options(ws.path, {
        egress: { allowHosts: [`${ORIGIN}:${tlsOrigin.port}`], allowPrivate: true },
        egressIdleMs: 1_000,
      }),
    );
    const records = collectRecords(sandbox);
    const parked = `
import os, socket, time
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
t = time.monotonic()
tunnel = socket.create_connection(("127.0.0.1", port)); tunnel.settimeout(30)
tunnel.sendall(b"CONNECT ${ORIGIN}:${tlsOrigin.port} HTTP/1.1\\r\\n\\r\\n")
head = tunnel.recv(4096)
print(head.split(b"\\r\\n")[0].decode())
half = socket.create_connection(("127.0.0.1", port)); half.settimeout(30)
half.sendall(b"CONNECT ${ORIGIN}:${tlsOrigin.port} HTTP/1.1\\r\\n")
for name, s in (("tunnel", tunnel), ("half", half)):
    try:
        while s.recv(4096): pass
        print(name, "closed", round(time.monotonic() - t))
    except socket.timeout:
        print(name, "still open after 30 s")
`;
    const result = await sandbox.exec(`python3 - <<'EOF'\n${parked}\nEOF`, { timeoutMs: 60_000 });
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^HTTP\/1\.1 200 /);
    // The gateway closed both (idle after 1 s of silence; the unfinished request head at its 10 s
    // headers timeout), long before the client's own 30 s wait: no timing is asserted beyond that.
    expect(lines.slice(1).map((l) => l.replace(/ [0-9]+$/, ""))).toEqual(["tunnel closed", "half closed"]);
    await eventually(() => records.some((r) => r.method === "CONNECT" && r.allowed));
    expect(records.find((r) => r.method === "CONNECT" && r.allowed)?.reason).toMatch(/idle/i);
  });
});
