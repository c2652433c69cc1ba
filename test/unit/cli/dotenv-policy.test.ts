import { describe, expect, it } from "vitest";
import { type DotenvFacts, decideDotenv } from "../../../src/cli/dotenv/dotenv-policy.js";

const P = "/w/.env";
function file(parsed: Record<string, string>, more: Partial<Extract<DotenvFacts, { kind: "file" }>> = {}) {
  return { kind: "file", parsed, doubt: undefined, changed: false, firstSeen: false, ...more } as const;
}
const ATTACK = {
  HARNESS_NETWORK: "host",
  HARNESS_WORKSPACE: "/other",
  XDG_STATE_HOME: ".st",
  ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
  ANTHROPIC_API_KEY: "k",
  HARNESS_IMAGE: "evil",
  HARNESS_RUNTIME: "runc",
  DOCKER_HOST: "tcp://1.2.3.4:2375",
  DOCKER_CONTEXT: "evil",
  HOME: "/tmp/x",
  PATH: "/w/bin",
  MODEL_ID: "m",
};

describe("decideDotenv", () => {
  it("loads a user's own .env unchanged: key, model, endpoint", () => {
    const own = { ANTHROPIC_API_KEY: "k", MODEL_ID: "m", ANTHROPIC_BASE_URL: "https://proxy.example" };
    expect(decideDotenv(P, file(own))).toEqual({ load: own, lines: [] });
  });

  it("never loads a widening key, from any .env, and says so in one line each", () => {
    const d = decideDotenv(
      P,
      file({ HARNESS_NETWORK: "host", HARNESS_ALLOW_HOSTS: "evil.example", HARNESS_ALLOW: "npm" }),
    );
    expect(d.load).toEqual({});
    expect(d.lines).toEqual([
      expect.stringMatching(
        /^harness: ignoring HARNESS_NETWORK=host from \/w\/\.env: a \.env cannot widen the sandbox \(pass --network or export HARNESS_NETWORK\)$/,
      ),
      expect.stringMatching(/ignoring HARNESS_ALLOW_HOSTS=evil\.example .*--allow-host/),
      expect.stringMatching(/ignoring HARNESS_ALLOW=npm .*--allow /),
    ]);
  });

  it("lets HARNESS_NETWORK=none and empty allow lists through: they widen nothing", () => {
    const d = decideDotenv(P, file({ HARNESS_NETWORK: "none", HARNESS_ALLOW_HOSTS: "" }));
    expect(d).toEqual({ load: { HARNESS_NETWORK: "none", HARNESS_ALLOW_HOSTS: "" }, lines: [] });
  });

  it.each([
    [{ kind: "sandbox-wrote" } as const, /a sandbox wrote it/],
    [
      { kind: "changed-under-sandbox", workspace: "/w" } as const,
      /it changed while a sandbox could write \/w/,
    ],
  ])("loads only free keys from a doubtful .env (%o), in one line naming the rest", (doubt, why) => {
    const d = decideDotenv(P, file(ATTACK, { doubt, changed: true, firstSeen: true }));
    expect(d.load).toEqual({ MODEL_ID: "m" });
    expect(d.lines[0]).toMatch(
      /^harness: not loading HARNESS_WORKSPACE, XDG_STATE_HOME, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, HARNESS_IMAGE, HARNESS_RUNTIME, DOCKER_HOST, DOCKER_CONTEXT, HOME, PATH from \/w\/\.env: /,
    );
    expect(d.lines[0]).toMatch(why);
    expect(d.lines[0]).toMatch(/run 'harness trust-env \/w\/\.env' to load it again$/);
    expect(d.lines[1]).toMatch(/ignoring HARNESS_NETWORK=host/);
    expect(d.lines).toHaveLength(2);
  });

  it("says when a .env is new or changed, and which guarded keys it sets", () => {
    expect(
      decideDotenv(P, file({ MODEL_ID: "m", ANTHROPIC_BASE_URL: "u" }, { changed: true })).lines,
    ).toEqual(["harness: /w/.env changed since harness last loaded it; it sets ANTHROPIC_BASE_URL"]);
    expect(decideDotenv(P, file({ MODEL_ID: "m" }, { changed: true, firstSeen: true })).lines).toEqual([
      "harness: /w/.env is new to harness; it sets no guarded key",
    ]);
  });

  it("refuses a link or anything but a regular file, whole", () => {
    expect(decideDotenv(P, { kind: "not-a-file", what: "a symbolic link" })).toEqual({
      load: {},
      lines: ["harness: not loading /w/.env: it is a symbolic link, which harness never follows or reads"],
    });
  });

  it("shows a planted value on one line, escaped and cut", () => {
    const [line] = decideDotenv(P, file({ HARNESS_NETWORK: `host\n\u001b[2J${"x".repeat(100)}` })).lines;
    expect(line).not.toContain("\n");
    expect(line).not.toContain("\u001b");
    expect(line).toContain("...");
  });
});
