/**
 * The programs harness runs inside the container (executor.py, relay.py…) are real files beside the
 * code that starts them, so that the check lints them and unit tests run them. They are read once,
 * by URL: under tsx and vitest that is the file in src/; in the bundle, scripts/build.mjs copies
 * each one next to the chunks in dist/, where the same relative URL finds it (names are unique).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const texts = new Map<string, string>();

export function programText(url: URL): string {
  const key = url.href;
  let text = texts.get(key);
  if (text === undefined) {
    text = readFileSync(fileURLToPath(url), "utf8");
    texts.set(key, text);
  }
  return text;
}
