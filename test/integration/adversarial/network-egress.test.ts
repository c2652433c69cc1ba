import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

/**
 * Checks the routing table first and only then tries non-loopback addresses (TEST-NET-1 and the IPv6
 * documentation prefix), so that if a route ever existed it would stop before sending any packet. With
 * no route, connect() fails inside the kernel with ENETUNREACH and nothing leaves the namespace.
 */
const EGRESS_PROBE = `
import errno, socket, sys, time
def fields(path, skip):
    with open(path) as f:
        return [line.split() for line in f.read().splitlines()[skip:] if line.strip()]
v4 = fields("/proc/net/route", 1)
v6_devices = {row[-1] for row in fields("/proc/net/ipv6_route", 0)}
print("routes4", len(v4))
print("routes6-devices", ",".join(sorted(v6_devices)) or "-")
if v4 or v6_devices - {"lo"}:
    sys.exit("a route exists: not probing non-loopback addresses")
def attempt(name, family, kind, addr):
    s = socket.socket(family, kind)
    start = time.monotonic()
    try:
        s.connect(addr) if kind == socket.SOCK_STREAM else s.sendto(b"x", addr)
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno), int((time.monotonic() - start) * 1000))
attempt("tcp4", socket.AF_INET, socket.SOCK_STREAM, ("192.0.2.1", 443))
attempt("tcp6", socket.AF_INET6, socket.SOCK_STREAM, ("2001:db8::1", 443, 0, 0))
attempt("udp4", socket.AF_INET, socket.SOCK_DGRAM, ("192.0.2.1", 53))
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
attempt("loopback", socket.AF_INET, socket.SOCK_STREAM, server.getsockname())
`;

/** Tries the host's loopback port and abstract unix socket from inside; both belong to the host's namespace. */
const HOST_LOOPBACK_PROBE = String.raw`
import errno, socket, sys
for name, family, addr in (("tcp", socket.AF_INET, ("127.0.0.1", int(sys.argv[1]))),
                           ("abstract", socket.AF_UNIX, "\0" + sys.argv[2])):
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(5)
    try:
        s.connect(addr); print(name, "CONNECTED", s.recv(100))
    except OSError as e:
        print(name, errno.errorcode.get(e.errno))
`;

function listen(server: Server, where: string | { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(where, () => resolve());
  });
}

describe.skipIf(skipDocker)("adversarial: network egress", () => {
  it("has no route out: a connect to a non-loopback address fails at once with ENETUNREACH", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec(`python3 - <<'EOF'\n${EGRESS_PROBE}\nEOF`, { timeoutMs: 30_000 });
    expect(result.stderr).toBe("");
    const lines = Object.fromEntries(
      result.stdout
        .trim()
        .split("\n")
        .map((l) => [l.split(" ")[0], l]),
    );
    expect(lines["routes4"]).toBe("routes4 0");
    expect(lines["routes6-devices"]).toMatch(/^routes6-devices (lo|-)$/);
    for (const name of ["tcp4", "tcp6", "udp4"]) {
      const [, code, ms] = (lines[name] ?? "").split(" ");
      expect(code, name).toBe("ENETUNREACH");
      // Refused inside the kernel: no packet, no wait for a timeout.
      expect(Number(ms), name).toBeLessThan(100);
    }
    // Sockets themselves work; what is missing is any way out.
    expect(lines["loopback"]).toBe("loopback OK");
  });

  it("cannot reach services on the host's loopback, by TCP or by abstract unix socket", async () => {
    using ws = makeWorkspace();
    const secret = `host-only-${randomBytes(6).toString("hex")}`;
    let connections = 0;
    const onConnection = (socket: import("node:net").Socket) => {
      connections++;
      socket.end(secret);
    };
    const tcp = createServer(onConnection);
    const abstract = createServer(onConnection);
    const abstractName = `harness-adversarial-${randomBytes(6).toString("hex")}`;
    await listen(tcp, { host: "127.0.0.1", port: 0 });
    await listen(abstract, `\0${abstractName}`);
    try {
      const port = (tcp.address() as { port: number }).port;
      await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
      const result = await sandbox.exec(
        `python3 - ${port} ${abstractName} <<'EOF'\n${HOST_LOOPBACK_PROBE}\nEOF`,
        { timeoutMs: 30_000 },
      );
      expect(result.stdout).toBe("tcp ECONNREFUSED\nabstract ECONNREFUSED\n");
      expect(connections).toBe(0);
    } finally {
      tcp.close();
      abstract.close();
    }
  });
});
