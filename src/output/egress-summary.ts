/**
 * Allowlist mode's lines at the end of a run's text view: what was reached, how much went each way,
 * and what was refused and why. Only combined in when the sandbox has a gateway.
 */
import type { AgentEvents } from "../agent/events.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { createStyle } from "../terminal/style.js";
import { formatBytes } from "../text/units.js";
import { EgressTally } from "./egress-tally.js";

export interface EgressSummaryOptions {
  /** Where the text view goes. */
  out: NodeJS.WritableStream;
  /** Use colours. */
  color: boolean;
}

/** Hosts named per line kind; the rest are counted. */
const MAX_SHOWN = 8;
const MAX_FIELD_CHARS = 200;

/**
 * Counts records as they come and prints the summary when a run ends; each run of an interactive
 * session gets its own (records between runs count towards the next).
 */
export function createEgressSummary(options: EgressSummaryOptions): AgentEvents {
  const style = createStyle(options.color);
  let tally = new EgressTally();
  return {
    onEgress: (record) => tally.add(record),
    onRunEnd: () => {
      const lines = egressSummaryLines(tally).map((line) =>
        line.startsWith("network: refused") ? style.warn(line) : style.dim(line),
      );
      options.out.write(`${lines.join("\n")}\n`);
      tally = new EgressTally();
    },
  };
}

/** The summary's lines, uncoloured; refusals start with "network: refused". */
function egressSummaryLines(tally: EgressTally): string[] {
  if (tally.empty) return ["network: allowlist mode; nothing went through the gateway"];
  const reached = tally.reached();
  const refused = tally.refused();
  const lines = [
    `network: ${count(tally.connections, "connection")} through the gateway, ${formatBytes(tally.bytesDown)} down, ${formatBytes(tally.bytesUp)} up`,
  ];
  if (reached.length > 0) {
    const shown = reached
      .slice(0, MAX_SHOWN)
      .map(
        (h) =>
          `${field(h.target)} (${count(h.connections, "connection")}, ${formatBytes(h.bytesUp + h.bytesDown)})`,
      );
    lines.push(`network: reached ${shown.join(", ")}${more(reached.length)}`);
  }
  for (const denial of refused.slice(0, MAX_SHOWN)) {
    const times = denial.count > 1 ? ` (${denial.count} times)` : "";
    lines.push(`network: refused ${field(denial.target)}${times}: ${field(denial.reason)}`);
  }
  if (refused.length > MAX_SHOWN) lines.push(`network: refused ${refused.length - MAX_SHOWN} more hosts`);
  return lines;
}

function more(total: number): string {
  return total > MAX_SHOWN ? ` and ${total - MAX_SHOWN} more` : "";
}

/** Text from the sandbox on one line, without escape sequences, not too long. */
function field(text: string): string {
  const clean = sanitizeForTerminal(text).replace(/\s+/g, " ");
  return clean.length > MAX_FIELD_CHARS ? `${clean.slice(0, MAX_FIELD_CHARS)}…` : clean;
}

function count(n: number, noun: string): string {
  return `${n.toLocaleString("en-US")} ${noun}${n === 1 ? "" : "s"}`;
}
