// The resolve hook behind module-trace.mjs (runs on the loader's own thread).
import { appendFileSync } from "node:fs";

export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  const trace = process.env.HARNESS_MODULE_TRACE;
  if (trace) appendFileSync(trace, `${result.url}\n`);
  return result;
}
