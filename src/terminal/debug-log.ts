/**
 * `DEBUG=harness:*` logs name what the sandbox made and printed (`%s` values: command lines, paths,
 * a relay's stderr). They reach the terminal through sanitizeForTerminal like everything else: the
 * values are escaped before `debug` adds its own colours, which stay colours.
 */
import createDebug from "debug";
import { sanitizeForTerminal } from "./sanitize.js";

export function sanitizeDebugLogs(): void {
  const formatArgs = createDebug.formatArgs;
  createDebug.formatArgs = function (this: createDebug.Debugger, args: unknown[]) {
    // args[0] is harness's own format string; the rest are the values it names.
    for (let i = 1; i < args.length; i += 1) {
      const value = args[i];
      if (typeof value === "string") args[i] = sanitizeForTerminal(value, { oneLine: true });
    }
    formatArgs.call(this, args);
  };
}
