/**
 * A git repository over "dumb" HTTP: a bare repo (after `git update-server-info`) served as static
 * files, made at test time with the host's git. Dumb HTTP needs no CGI and exercises the same path
 * through the gateway: plain-HTTP GETs by absolute URL.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, normalize, sep } from "node:path";
import { type Origin, reply, startOrigin } from "./origin-server.js";

/** The committed README.md's text, to check the clone from the host. */
export const GIT_FIXTURE_README = "harness git fixture ok\n";

export interface GitHttpStub extends Origin {
  /** `http://<hostname>:<port>/repo.git`, for `git clone`. */
  readonly cloneUrl: string;
}

/** Runs git ignoring the host's user config (signing, hooks, templates would change the result). */
function git(cwd: string, args: readonly string[]): void {
  execFileSync("git", args, {
    cwd,
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "harness tests",
      GIT_AUTHOR_EMAIL: "tests@example.org",
      GIT_COMMITTER_NAME: "harness tests",
      GIT_COMMITTER_EMAIL: "tests@example.org",
    },
  });
}

function makeBareRepo(root: string): string {
  const work = join(root, "work");
  git(root, ["init", "-q", "-b", "main", work]);
  writeFileSync(join(work, "README.md"), GIT_FIXTURE_README);
  git(work, ["add", "README.md"]);
  git(work, ["commit", "-q", "-m", "fixture"]);
  const bare = join(root, "repo.git");
  git(root, ["clone", "-q", "--bare", "--no-local", work, bare]);
  // Dumb HTTP clients read info/refs and objects/info/packs: this writes them.
  git(bare, ["update-server-info"]);
  return bare;
}

/** Starts the server on 127.0.0.1:0; `hostname` is the name the sandbox will use for it. */
export async function startGitHttpStub(hostname: string): Promise<GitHttpStub> {
  const root = mkdtempSync(join(tmpdir(), "harness-git-origin-"));
  const bare = makeBareRepo(root);
  const origin = await startOrigin((request, response) => {
    const path = decodeURIComponent((request.url ?? "").split("?")[0] ?? "");
    const file = path.startsWith("/repo.git/") ? normalize(join(bare, path.slice("/repo.git/".length))) : "";
    const inside = file.startsWith(bare + sep) && statSync(file, { throwIfNoEntry: false })?.isFile();
    reply(response, inside ? readFileSync(file) : undefined, "application/octet-stream");
  });
  const close = async (): Promise<void> => {
    await origin.close();
    rmSync(root, { recursive: true, force: true });
  };
  return {
    ...origin,
    cloneUrl: `http://${hostname}:${origin.port}/repo.git`,
    close,
    [Symbol.asyncDispose]: close,
  };
}
