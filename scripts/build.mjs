// Bundles the CLI with esbuild: loading one bundle is about twice as fast as resolving dockerode's and
// the SDK's module trees on every start (see shared/notes/sandbox-pitfalls.md), and `harness exec`
// pays start-up on every call. Code splitting keeps the SDK out of commands that do not use it.
import { build } from "esbuild";

await build({
  entryPoints: ["src/cli.ts"],
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: true,
  // Native optional add-ons of ssh2 (pulled in by docker-modem); harness never uses SSH transport.
  external: ["ssh2", "cpu-features"],
  // Bundled CommonJS modules call require() for Node built-ins.
  banner: {
    js: "import { createRequire as __harnessCreateRequire } from 'node:module';\nconst require = __harnessCreateRequire(import.meta.url);",
  },
  logLevel: "warning",
});
