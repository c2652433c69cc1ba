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
  // docker-modem loads ssh2 (and its native add-ons) at start-up for the ssh:// transport, about
  // 24 ms on every `harness exec` (measured by bench/). harness talks to a local socket or
  // tcp DOCKER_HOST only, so ssh2 is replaced by an empty module.
  plugins: [stubModules(["ssh2", "cpu-features"])],
  // Bundled CommonJS modules call require() for Node built-ins.
  banner: {
    js: "import { createRequire as __harnessCreateRequire } from 'node:module';\nconst require = __harnessCreateRequire(import.meta.url);",
  },
  logLevel: "warning",
});

/** Resolves the given bare module names to an empty CommonJS module. */
function stubModules(names) {
  const filter = new RegExp(`^(${names.join("|")})$`);
  return {
    name: "stub-modules",
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: "stub" }));
      b.onLoad({ filter: /.*/, namespace: "stub" }, () => ({
        contents: "module.exports = {};",
        loader: "js",
      }));
    },
  };
}
