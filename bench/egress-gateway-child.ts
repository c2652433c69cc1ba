/**
 * The gateway alone in a process, for egress-bench's memory figure: its maxRSS is the gateway's
 * (plus Node's baseline, reported apart). argv: socketDir originName originPort. Prints the socket path and its
 * baseline maxRSS as JSON; on stdin's end prints the final figures as JSON and exits.
 */
import { EgressGateway } from "../src/sandbox/egress/egress-gateway.js";
import { SANDBOX_DEFAULTS } from "../src/sandbox/sandbox-request.js";

const [socketDir, originName, originPort] = process.argv.slice(2);
if (socketDir === undefined || originName === undefined || originPort === undefined)
  throw new Error("usage: socketDir originName originPort");

const gateway = await EgressGateway.start({
  socketDir,
  allowHosts: [`${originName}:${originPort}`],
  allowPrivate: true,
  limitBytes: 64 * 1024 ** 3,
  maxConnections: SANDBOX_DEFAULTS.egressMaxConnections,
  idleMs: SANDBOX_DEFAULTS.egressIdleMs,
  maxConnectionMs: SANDBOX_DEFAULTS.egressMaxConnectionMs,
  lookup: async (hostname) =>
    hostname === originName ? [{ address: "127.0.0.1", family: 4 }] : Promise.reject(new Error("ENOTFOUND")),
});
const kib = (): number => process.resourceUsage().maxRSS;
process.stdout.write(`${JSON.stringify({ socketPath: gateway.socketPath, baselineMaxRssKiB: kib() })}\n`);
process.stdin.resume();
process.stdin.on("end", () => {
  const totals = gateway.totals();
  void gateway.close().then(() => {
    process.stdout.write(`${JSON.stringify({ maxRssKiB: kib(), totals })}\n`);
    process.exit(0);
  });
});
