/**
 * `--output-format json`: nothing on stdout while the run goes on, then the result object alone
 * (Claude Code's `claude -p --output-format json`). People follow the run on stderr meanwhile.
 */
import type { AgentRunResult } from "../agent/agent-types.js";
import type { AgentEvents } from "../agent/events.js";
import type { ResultMessage } from "./result-summary.js";

export interface JsonOutputOptions {
  /** Writes one JSON object as one line. */
  writeJson: (message: object) => void;
  /** The result object for a finished run. */
  summarize: (result: AgentRunResult) => ResultMessage;
}

export function createJsonOutput(options: JsonOutputOptions): AgentEvents {
  return { onRunEnd: (result) => options.writeJson(options.summarize(result)) };
}
