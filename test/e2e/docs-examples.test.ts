/**
 * The docs' examples run. Every harness command in a shell block of README.md and docs/
 * (support/doc-examples.ts) is one of three things here: run with the default image in a workspace
 * made for it (its `./proj` replaced by that workspace, any registry a stub on this host named the
 * way the host's configuration would name a mirror, `harness run`'s model the fake Messages API
 * calling the commands the task asks for); one of the ecosystem commands of docs/toolchains.md,
 * which must be exactly a command test/e2e/toolchains.test.ts runs; or not a claim about the default
 * image, with the reason and the test that covers it. An example in the docs that is none of these,
 * or an entry here no example matches any more, fails the first test: a new example comes with its
 * run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removePackageCacheVolumes } from "../../src/sandbox/docker/package-cache/package-cache-volume.js";
import { type DocExample, docExamples } from "../support/doc-examples.js";
import { skipDocker } from "../support/docker-available.js";
import { PIP_FIXTURE_PROJECT } from "../support/egress/pip-index-stub.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { freePort } from "../support/publish-client.js";
import { type CliRun, runCli, spawnCli } from "../support/run-cli.js";
import {
  chownTree,
  ecosystemCases,
  makeTestProject,
  type Project,
  writeProject,
} from "../support/toolchain-projects.js";
import { startToolchainRegistries, type ToolchainRegistries } from "../support/toolchain-registries.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** This test run's sandbox user, and so its package cache volume's owner. */
const UID = 20_000 + ((process.pid + 15_485) % 20_000);

/** What the test does with an example, by its text. */
type Handling =
  | { run: (example: DocExample, ctx: Context) => Promise<void> }
  | { ecosystem: string }
  | { notDefaultImage: string };

interface Context {
  registries: ToolchainRegistries;
  /** A fresh workspace holding `project`, owned by this run's sandbox user. */
  workspace(project?: Project): string;
  /** The fake Messages API's env, with `commands` queued as one bash call each, then an answer. */
  model(commands: string[]): Record<string, string>;
}

/** The example's arguments with its workspace replaced, and `--allow-private` for the stubs. */
function argsFor(example: DocExample, workspace: string): string[] {
  const args = example.args.map((arg, i) =>
    ["-w", "--workspace"].includes(example.args[i - 1] ?? "") ? workspace : arg,
  );
  return args.includes("--allow") ? [args[0] as string, "--allow-private", ...args.slice(1)] : args;
}

function expectOk(run: CliRun, passed?: RegExp): void {
  const output = `${run.stdout}\n${run.stderr}`;
  expect(run.code, output).toBe(0);
  expect(run.stderr).not.toMatch(/network: refused/);
  if (passed !== undefined) expect(output).toMatch(passed);
}

/** `harness run` as the example gives it, the model calling `commands`; every call must exit 0. */
async function runTask(example: DocExample, ctx: Context, workspace: string, commands: string[], env = {}) {
  const run = await runCli(
    [
      ...argsFor(example, workspace).slice(0, -1),
      "--output-format",
      "stream-json",
      example.args.at(-1) as string,
    ],
    {
      env: { ...ctx.model(commands), ...env },
      timeoutMs: 600_000,
    },
  );
  expectOk(run);
  const results = run.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line["harness"] !== undefined);
  expect(
    results.map((line) => (line["harness"] as Record<string, unknown>)["exit_code"]),
    run.stdout,
  ).toEqual(commands.map(() => 0));
}

async function exec(
  example: DocExample,
  workspace: string,
  env: Record<string, string> = {},
): Promise<CliRun> {
  return runCli(argsFor(example, workspace), { env, timeoutMs: 600_000 });
}

/** The README's everyday project: `make test` runs its tests. */
let readmeProject = "";

const npmRun = async (example: DocExample, ctx: Context) => {
  const node = ctx.registries.ecosystems.find((e) => e.name === "Node");
  if (node === undefined) throw new Error("no Node case");
  await runTask(example, ctx, ctx.workspace(node.project), [node.project.command], node.env);
};

const npmInstall = async (example: DocExample, ctx: Context) => {
  const node = ctx.registries.ecosystems.find((e) => e.name === "Node");
  if (node === undefined) throw new Error("no Node case");
  const workspace = ctx.workspace({
    ...node.project,
    files: { "package.json": node.project.files["package.json"] ?? "" },
  });
  expectOk(await exec(example, workspace, node.env), /added 1 package/);
};

/** `npm ci` in the Node case's project, its lockfile included: the same package installed from it. */
const npmCi = async (example: DocExample, ctx: Context) => {
  const node = ctx.registries.ecosystems.find((e) => e.name === "Node");
  if (node === undefined) throw new Error("no Node case");
  expectOk(await exec(example, ctx.workspace(node.project), node.env), /added 1 package/);
};

const HANDLING: Record<string, Handling> = {
  'bash scripts/setup.sh && node bin/harness.mjs run --workspace ./proj "Create hello.py that prints Hello, Agent Harness; run it and tell me its output"':
    {
      run: (example, ctx) =>
        runTask(example, ctx, ctx.workspace(), [
          `printf 'print("Hello, Agent Harness")\\n' > hello.py && python3 hello.py`,
        ]),
    },
  "node bin/harness.mjs replay examples/hello/transcript.jsonl": {
    run: async (example) => {
      const run = await runCli(example.args, { cwd: ROOT, timeoutMs: 300_000 });
      expectOk(run);
    },
  },
  'harness run -w ./proj "make the failing test pass"': {
    run: async (example, ctx) => {
      readmeProject = ctx.workspace(makeTestProject);
      await runTask(example, ctx, readmeProject, ["make test"]);
    },
  },
  'harness run -w ./proj --continue "now add a test for it"': {
    // The run before it, in the same workspace, is the one it goes on with.
    run: (example, ctx) =>
      runTask(example, ctx, readmeProject || ctx.workspace(makeTestProject), ["make test"]),
  },
  "harness exec -w ./proj -- 'make test'": {
    run: async (example, ctx) =>
      expectOk(await exec(example, ctx.workspace(makeTestProject)), makeTestProject.passed),
  },
  'harness run --isolation copy --apply -w ./proj "fix the failing test"': {
    run: (example, ctx) => runTask(example, ctx, ctx.workspace(makeTestProject), ["make test"]),
  },
  'harness run -w ./proj --allow npm "install the dependencies and run the tests"': { run: npmRun },
  'harness run --workspace ./proj --allow npm "install the dependencies and run the tests"': { run: npmRun },
  "harness exec --isolation copy -w ./proj -- 'make test'": {
    run: async (example, ctx) =>
      expectOk(await exec(example, ctx.workspace(makeTestProject)), makeTestProject.passed),
  },
  "harness exec --workspace ./proj --allow pypi --allow-host docs.example.org -- pip install --user -r requirements.txt":
    {
      run: async (example, ctx) => {
        const workspace = ctx.workspace({
          files: { "requirements.txt": `${PIP_FIXTURE_PROJECT}\n` },
          command: "",
          passed: /./,
        });
        const run = await exec(example, workspace, { PIP_INDEX_URL: ctx.registries.pip.indexUrl });
        expectOk(run, new RegExp(`Successfully installed ${PIP_FIXTURE_PROJECT.replace("-", "[-_]")}`));
      },
    },
  "harness mcp -w ./proj --publish 8000": {
    // What the comment says the agent runs, through exec: the project's dev server on port 8000.
    run: async (example, ctx) => {
      const workspace = ctx.workspace({
        files: {
          "package.json": JSON.stringify({
            name: "dev",
            version: "1.0.0",
            scripts: { dev: "node server.js" },
          }),
          "server.js":
            'const port = Number(process.argv[process.argv.indexOf("--port") + 1]);\nrequire("node:http").createServer((q, s) => s.end("dev server\\n")).listen(port, "127.0.0.1");\n',
        },
        command: "",
        passed: /./,
      });
      const command =
        "(npm run dev -- --port 8000 > dev.log 2>&1 &); for i in $(seq 100); do curl -sf http://127.0.0.1:8000/ && exit 0; sleep 0.2; done; cat dev.log; exit 1";
      const run = await runCli(["exec", "-w", workspace, "--", command], { timeoutMs: 120_000 });
      expectOk(run, /dev server/);
      expect(example.args).toEqual(["mcp", "-w", "./proj", "--publish", "8000"]);
    },
  },
  "harness exec -w ./proj --publish 8000:18000 --timeout 86400 -- 'python3 -m http.server 8000'": {
    // Ports chosen free here; the server runs until harness is interrupted, as it would be.
    run: async (example, ctx) => {
      const [port, hostPort] = [await freePort(), await freePort()];
      const args = argsFor(example, ctx.workspace()).map((arg) =>
        arg.replace("8000:18000", `${port}:${hostPort}`).replace("http.server 8000", `http.server ${port}`),
      );
      const cli = spawnCli(args, { timeoutMs: 120_000 });
      try {
        await cli.waitForStdout(/./, 60_000).catch(() => {});
        let body = "";
        for (let i = 0; i < 100 && !body.includes("Directory listing"); i++) {
          body = await fetch(`http://127.0.0.1:${hostPort}/`)
            .then((r) => r.text())
            .catch(() => "");
          if (!body) await new Promise((resolve) => setTimeout(resolve, 300));
        }
        expect(body).toContain("Directory listing");
      } finally {
        cli.child.kill("SIGINT");
        await cli.done;
      }
    },
  },
  "harness exec --workspace ./a --allow npm -- npm install": { run: npmInstall },
  "harness exec --workspace ./a --allow npm -- npm ci": { run: npmCi },
  "harness exec --workspace ./b --allow npm -- npm install": { run: npmInstall },
  "harness exec -w ./proj --allow npm -- 'npm ci && npm test'": { ecosystem: "Node" },
  "harness exec -w ./proj --allow pypi -- 'python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python -m unittest -v'":
    { ecosystem: "Python" },
  "harness exec -w ./proj --allow go -- 'go test ./...'": { ecosystem: "Go" },
  "harness exec -w ./proj --allow cargo -- 'cargo test'": { ecosystem: "Rust" },
  "harness exec -w ./proj --allow maven -- 'mvn -B test'": { ecosystem: "Java" },
  "harness exec -w ./proj -- 'make && ./test'": { ecosystem: "C" },
  "harness exec -w ./proj -- ls": {
    notDefaultImage: "Podman's socket in DOCKER_HOST: conformance-podman.test.ts runs the sandbox there",
  },
  'harness run --fork RUN@22 --workspace ../try-2 "do it differently"': {
    notDefaultImage: "needs a run of your own with a step 22: checkpoints.test.ts forks one",
  },
  "harness replay RUN.jsonl --from 22": {
    notDefaultImage: "needs a run of your own with a step 22: replay.test.ts replays from a checkpoint",
  },
  "$ harness exec --engine kubernetes -w ./proj -- make test": {
    notDefaultImage: "a Kubernetes cluster: cli-kubernetes.test.ts",
  },
  '$ harness run --engine kubernetes --namespace agents "fix the failing test"': {
    notDefaultImage: "a Kubernetes cluster: cli-kubernetes.test.ts",
  },
  "$ HARNESS_ENGINE=kubernetes harness batch tasks.jsonl --concurrency 16": {
    notDefaultImage: "a Kubernetes cluster: batch-kubernetes.test.ts",
  },
  "$ harness exec --engine kubernetes --kube-warm-pool agents -w ./proj -- make test": {
    notDefaultImage: "a Kubernetes cluster with a warm pool: batch-warm-pool.test.ts",
  },
  "harness batch (your machine or CI): writes tasks and workspaces to the batch volume, creates the Job": {
    notDefaultImage: "a diagram, not a command",
  },
  "harness run --workspace ./proj --secret GH_TOKEN@github.com --allow-request 'GET,POST@github.com/me/proj.git' \"fix the failing test, commit, and push the branch fix-tests\"":
    { notDefaultImage: "github.com and a token: secrets-cli.test.ts pushes through --secret to a stub" },
  "NPM_TOKEN=npm_… harness exec --workspace ./proj --secret NPM_TOKEN@npm.example.com -- npm ci": {
    notDefaultImage: "a private registry and its token: egress-secrets.test.ts installs through --secret",
  },
};

describe("the docs' examples", () => {
  const examples = docExamples(ROOT);

  it("each is run here, run by toolchains.test.ts, or said not to be about the default image", () => {
    const unknown = examples
      .filter((e) => HANDLING[e.text] === undefined)
      .map((e) => `${e.where}: ${e.text}`);
    expect(unknown, "examples with no run in docs-examples.test.ts").toEqual([]);
    const texts = new Set(examples.map((e) => e.text));
    expect(Object.keys(HANDLING).filter((text) => !texts.has(text))).toEqual([]);
    // docs/toolchains.md shows exactly the commands toolchains.test.ts runs, with their presets.
    for (const example of examples) {
      const handling = HANDLING[example.text];
      if (handling === undefined || !("ecosystem" in handling)) continue;
      const expected = ecosystemCases.find((c) => c.name === handling.ecosystem);
      const allow = example.args.indexOf("--allow");
      expect({
        preset: allow < 0 ? undefined : example.args[allow + 1],
        command: example.args.at(-1),
      }).toEqual({
        preset: expected?.preset,
        command: expected?.command,
      });
    }
  });

  describe.skipIf(skipDocker)("with the default image", { timeout: 900_000 }, () => {
    const scratch = mkdtempSync(join(tmpdir(), "harness-doc-examples-"));
    const workspaces: string[] = [];
    const fake = useFakeApi();
    let registries: ToolchainRegistries;
    beforeAll(async () => {
      registries = await startToolchainRegistries(scratch);
    });
    afterAll(async () => {
      for (const workspace of workspaces) await removeWorkspaceContainers(workspace);
      await registries?.[Symbol.asyncDispose]();
      rmSync(scratch, { recursive: true, force: true });
      await removePackageCacheVolumes(new Docker(), { uid: UID }).catch(() => {});
    });
    const ctx = (): Context => ({
      registries,
      workspace(project) {
        const workspace = mkdtempSync(join(scratch, "ws-"));
        if (project !== undefined) writeProject(workspace, project);
        chownTree(workspace, UID);
        workspaces.push(workspace);
        return workspace;
      },
      model(commands) {
        fake.api.enqueue(
          ...commands.map((command, i) => toolUseReply("bash", { command }, "", `toolu_doc_${i}`)),
          textReply("Done."),
        );
        return fake.env;
      },
    });

    for (const example of examples) {
      const handling = HANDLING[example.text];
      if (handling === undefined || !("run" in handling)) continue;
      it(`${example.where}: ${example.text}`, () => handling.run(example, ctx()));
    }
  });
});
