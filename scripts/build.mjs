// Bundles the CLI with esbuild: loading one bundle is about twice as fast as resolving dockerode's and
// the SDK's module trees on every start (see shared/notes/sandbox-pitfalls.md), and `harness exec`
// pays start-up on every call. Code splitting keeps the SDK out of commands that do not use it.
import { copyFileSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
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
  // 24 ms on every `harness exec` (measured by bench/). harness never uses it (ssh:// engines go
  // through the system's ssh: src/sandbox/docker/engine/ssh-dial-agent.ts), so ssh2 is an empty module.
  plugins: [stubModules(["ssh2", "cpu-features"]), withoutBuildKitSession()],
  // Bundled CommonJS modules call require() for Node built-ins.
  banner: {
    js: "import { createRequire as __harnessCreateRequire } from 'node:module';\nconst require = __harnessCreateRequire(import.meta.url);",
  },
  logLevel: "warning",
});

// The programs harness runs inside the container (src/sandbox/exec/program-text.ts) sit next to
// the chunks, where `new URL("./NAME", import.meta.url)` finds them; their names must be unique.
const programs = readdirSync("src", { recursive: true })
  .map(String)
  .filter((path) => /\.(py|sh)$/.test(path));
const names = new Set();
for (const path of programs) {
  const name = basename(path);
  if (names.has(name)) throw new Error(`two in-container programs are named ${name}`);
  names.add(name);
  copyFileSync(join("src", path), join("dist", name));
}

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

/**
 * dockerode loads its BuildKit session (grpc-js, protobufjs and their proto files) at start-up, about
 * 40 ms of every `harness exec` (measured with --cpu-prof); it is only used by `buildImage` with
 * `version: "2"`, which harness never asks for. The replacement fails such a build with a clear error.
 */
function withoutBuildKitSession() {
  return {
    name: "without-buildkit-session",
    setup(b) {
      b.onResolve({ filter: /^\.\/session$/ }, (args) =>
        /dockerode[\\/]lib$/.test(args.resolveDir)
          ? { path: "dockerode-session", namespace: "no-session" }
          : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: "no-session" }, () => ({
        contents:
          "module.exports = (_docker, _auth, callback) => callback(new Error('BuildKit sessions are left out of harness\\'s bundle'));",
        loader: "js",
      }));
    },
  };
}
