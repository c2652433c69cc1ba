// Preloaded with `node --import` (NODE_OPTIONS): records every module the process resolves, one URL
// a line, in the file HARNESS_MODULE_TRACE names. Tests use it to check what a command loads.
import { register } from "node:module";

register("./module-trace-hooks.mjs", import.meta.url);
