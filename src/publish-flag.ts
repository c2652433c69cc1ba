/**
 * `--publish PORT[:HOSTPORT]` (repeatable): which ports of the sandbox's loopback to make reachable
 * on the host's 127.0.0.1. HOSTPORT defaults to PORT. Decimal port numbers only, 1 to 65535.
 */
import { ConfigError } from "./errors.js";
import type { PublishRequest } from "./sandbox/sandbox-request.js";

const PUBLISH_PATTERN = /^([0-9]{1,5})(?::([0-9]{1,5}))?$/;

export function parsePublishFlags(values: readonly string[]): PublishRequest[] {
  const requests: PublishRequest[] = [];
  for (const value of values) {
    const match = PUBLISH_PATTERN.exec(value.trim());
    const port = Number(match?.[1]);
    const hostPort = match?.[2] === undefined ? port : Number(match[2]);
    if (match === null || !validPort(port) || !validPort(hostPort)) {
      throw new ConfigError(
        `--publish must be PORT or PORT:HOSTPORT (ports 1 to 65535, e.g. 8000 or 8000:18000), got '${value}'`,
      );
    }
    if (requests.some((earlier) => earlier.hostPort === hostPort)) {
      throw new ConfigError(`--publish: host port ${hostPort} is given twice`);
    }
    requests.push({ port, hostPort });
  }
  return requests;
}

function validPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1 && port <= 65_535;
}
