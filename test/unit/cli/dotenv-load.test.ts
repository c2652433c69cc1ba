import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadDotenvFile } from "../../../src/cli/dotenv/dotenv-load.js";
import {
  appendSpan,
  markSandboxWritten,
  setDotenvRecordsRoot,
  sha256,
} from "../../../src/cli/dotenv/dotenv-records.js";
import { watchEnvFiles } from "../../../src/cli/dotenv/env-file-watch.js";
import { trustEnvCommand } from "../../../src/cli/dotenv/trust-env-command.js";

let root: string;
let ws: string;
let state: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "harness-dotenv-"));
  ws = join(root, "ws");
  state = join(root, "state");
  mkdirSync(ws);
  setDotenvRecordsRoot({ XDG_STATE_HOME: state });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Loads `dir/.env` into a fresh env the way cli.ts does; the env and the lines said. */
function load(dir: string, env: NodeJS.ProcessEnv = {}): { env: NodeJS.ProcessEnv; lines: string[] } {
  const lines: string[] = [];
  const target: NodeJS.ProcessEnv = { XDG_STATE_HOME: state, ...env };
  loadDotenvFile(target, dir, (line) => lines.push(line));
  return { env: target, lines };
}

const ATTACK =
  "HARNESS_NETWORK=host\nHARNESS_WORKSPACE=/other\nXDG_STATE_HOME=.st\nANTHROPIC_BASE_URL=http://127.0.0.1:9\nDOCKER_HOST=tcp://10.0.0.1:2375\nMODEL_ID=m2\n";

describe("loading ./.env", () => {
  it("loads a user's own .env (outside the workspace) as before, saying once that it is new", () => {
    writeFileSync(
      join(root, ".env"),
      "ANTHROPIC_API_KEY=k\nMODEL_ID=m\nANTHROPIC_BASE_URL=https://proxy.example\n",
    );
    const first = load(root);
    expect(first.env).toMatchObject({
      ANTHROPIC_API_KEY: "k",
      MODEL_ID: "m",
      ANTHROPIC_BASE_URL: "https://proxy.example",
    });
    expect(first.lines).toEqual([
      `harness: ${join(root, ".env")} is new to harness; it sets ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL`,
    ]);
    expect(load(root).lines).toEqual([]);
    writeFileSync(join(root, ".env"), "ANTHROPIC_API_KEY=k2\nMODEL_ID=m\n");
    expect(load(root).lines).toEqual([
      `harness: ${join(root, ".env")} changed since harness last loaded it; it sets ANTHROPIC_API_KEY`,
    ]);
  });

  it("never overrides the real environment", () => {
    writeFileSync(join(root, ".env"), "ANTHROPIC_BASE_URL=http://127.0.0.1:9\n");
    expect(load(root, { ANTHROPIC_BASE_URL: "https://real" }).env["ANTHROPIC_BASE_URL"]).toBe("https://real");
  });

  it("never follows a symbolic link, to a file or to nothing", () => {
    writeFileSync(join(root, "real.env"), "ANTHROPIC_BASE_URL=http://127.0.0.1:9\n");
    symlinkSync(join(root, "real.env"), join(ws, ".env"));
    const { env, lines } = load(ws);
    expect(env["ANTHROPIC_BASE_URL"]).toBeUndefined();
    expect(lines).toEqual([
      `harness: not loading ${join(ws, ".env")}: it is a symbolic link, which harness never follows or reads`,
    ]);
    rmSync(join(root, "real.env"));
    expect(load(ws).lines[0]).toMatch(/symbolic link/);
  });

  it("refuses a FIFO planted as .env without waiting on it", () => {
    execFileSync("mkfifo", [join(ws, ".env")]);
    expect(load(ws).lines).toEqual([
      `harness: not loading ${join(ws, ".env")}: it is not a regular file, which harness never follows or reads`,
    ]);
  });

  it("after a run created .env in the workspace, loads only MODEL_ID from it until the user trusts it", () => {
    const watch = watchEnvFiles(ws, ws);
    writeFileSync(join(ws, ".env"), ATTACK);
    expect(watch.close()).toEqual([
      expect.stringMatching(/\.env was created while the sandbox could write it; .*harness trust-env/),
    ]);
    const { env, lines } = load(ws);
    expect(env).toEqual({ XDG_STATE_HOME: state, MODEL_ID: "m2" });
    expect(lines[0]).toMatch(
      /^harness: not loading HARNESS_WORKSPACE, XDG_STATE_HOME, ANTHROPIC_BASE_URL, DOCKER_HOST from .*\.env: a sandbox wrote it; /,
    );
    expect(lines[1]).toMatch(/ignoring HARNESS_NETWORK=host/);
    // Still refused the next time.
    expect(load(ws).env["ANTHROPIC_BASE_URL"]).toBeUndefined();

    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      trustEnvCommand(join(ws, ".env"));
    } finally {
      stderr.mockRestore();
    }
    const trusted = load(ws);
    expect(trusted.env).toMatchObject({
      HARNESS_WORKSPACE: "/other",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
    });
    expect(trusted.env["HARNESS_NETWORK"]).toBeUndefined();
  });

  it("after a run changed a .env in the current directory below the workspace, refuses it too", () => {
    mkdirSync(join(ws, "sub"));
    const watch = watchEnvFiles(ws, join(ws, "sub"));
    writeFileSync(join(ws, "sub", ".env"), ATTACK);
    expect(watch.close()).toHaveLength(1);
    expect(load(join(ws, "sub")).lines[0]).toMatch(/a sandbox wrote it/);
  });

  it("refuses the content a sandbox wrote wherever it is copied, until it is trusted there", () => {
    const watch = watchEnvFiles(ws, ws);
    writeFileSync(join(ws, ".env"), ATTACK);
    watch.close();
    const elsewhere = join(root, "elsewhere");
    mkdirSync(elsewhere);
    // cp gives it a new path and a new ctime that no sandbox's span covers: only its content says.
    copyFileSync(join(ws, ".env"), join(elsewhere, ".env"));
    const copied = load(elsewhere);
    expect(copied.env["ANTHROPIC_BASE_URL"]).toBeUndefined();
    expect(copied.lines[0]).toMatch(
      /not loading .*ANTHROPIC_BASE_URL.* from .*elsewhere\/\.env: a sandbox wrote it/,
    );

    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      trustEnvCommand(join(elsewhere, ".env"));
    } finally {
      stderr.mockRestore();
    }
    expect(load(elsewhere).env["ANTHROPIC_BASE_URL"]).toBe("http://127.0.0.1:9");
    // A content marked by a restore is refused the same way (restore-checkpoint.ts marks it).
    const restored = join(root, "restored");
    mkdirSync(restored);
    writeFileSync(join(restored, ".env"), "ANTHROPIC_BASE_URL=http://127.0.0.1:8\n");
    markSandboxWritten(sha256("ANTHROPIC_BASE_URL=http://127.0.0.1:8\n"));
    expect(load(restored).env["ANTHROPIC_BASE_URL"]).toBeUndefined();
  });

  it("refuses a .env anywhere below a workspace that changed while a sandbox could write there", () => {
    mkdirSync(join(ws, "deep", "er"), { recursive: true });
    const watch = watchEnvFiles(ws, ws);
    writeFileSync(join(ws, "deep", "er", ".env"), ATTACK);
    watch.close();
    const { env, lines } = load(join(ws, "deep", "er"));
    expect(env["ANTHROPIC_BASE_URL"]).toBeUndefined();
    expect(lines[0]).toMatch(new RegExp(`it changed while a sandbox could write ${ws}; `));
  });

  it("refuses a .env that changed after a harness died mid-run (its span never ended)", () => {
    appendSpan({ workspace: ws, pid: 4_194_303, start: Date.now() - 60_000 });
    writeFileSync(join(ws, ".env"), ATTACK);
    expect(load(ws).lines[0]).toMatch(/it changed while a sandbox could write/);
  });

  it("loads a .env the user wrote between runs, saying it changed", () => {
    const now = Date.now();
    appendSpan({ workspace: ws, pid: process.pid, start: now - 100_000 });
    appendSpan({ workspace: ws, pid: process.pid, start: now - 100_000, end: now - 50_000 });
    writeFileSync(join(ws, ".env"), "ANTHROPIC_BASE_URL=https://mine\n");
    const { env, lines } = load(ws);
    expect(env["ANTHROPIC_BASE_URL"]).toBe("https://mine");
    expect(lines).toEqual([expect.stringMatching(/is new to harness; it sets ANTHROPIC_BASE_URL$/)]);
  });

  it("keeps its records where the real environment says, whatever a .env says", () => {
    const watch = watchEnvFiles(ws, ws);
    writeFileSync(join(ws, ".env"), "XDG_STATE_HOME=.st\nANTHROPIC_BASE_URL=http://127.0.0.1:9\n");
    watch.close();
    // A trusted-looking load elsewhere must not move where the next decision reads from.
    expect(load(ws).lines[0]).toMatch(/a sandbox wrote it/);
    expect(load(ws).lines[0]).toMatch(/a sandbox wrote it/);
  });
});
