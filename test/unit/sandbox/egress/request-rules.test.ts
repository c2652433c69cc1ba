import { describe, expect, it } from "vitest";
import { judgedPath } from "../../../../src/sandbox/egress/http/request-path.js";
import {
  normalizedPath,
  parseRequestRule,
  RequestRules,
} from "../../../../src/sandbox/egress/request-rules.js";

function rules(...texts: string[]): RequestRules {
  return new RequestRules(
    texts.map((text) => {
      const parsed = parseRequestRule(text);
      if (!parsed.ok) throw new Error(parsed.reason);
      return parsed.rule;
    }),
  );
}

describe("request rules", () => {
  it("parses METHODS@HOST/PATH, normalized", () => {
    expect(parseRequestRule("get,head@API.example.org/v1/")).toMatchObject({
      ok: true,
      rule: { methods: ["GET", "HEAD"], pathPrefix: "/v1/", text: "GET,HEAD@api.example.org:443,80/v1/" },
    });
    expect(parseRequestRule("*@git.example.org:8443")).toMatchObject({
      ok: true,
      rule: { methods: undefined, pathPrefix: "/" },
    });
    for (const bad of [
      "GET api.example.org",
      "G-T@api.example.org",
      "GET@*.example.org/",
      "GET@api.example.org/a%2Fb",
    ]) {
      expect(parseRequestRule(bad).ok).toBe(false);
    }
  });

  it("lets through only what a rule of the host allows; other hosts are not governed", () => {
    const r = rules("GET,HEAD@api.example.org/v1/", "GET,POST@git.example.org/me/repo.git");
    expect(r.check("api.example.org", 443, "GET", "/v1/users?x=1")).toEqual({ ok: true });
    expect(r.check("api.example.org", 443, "head", "/v1")).toEqual({ ok: true });
    expect(r.check("other.example.org", 443, "DELETE", "/anything")).toEqual({ ok: true });
    expect(r.check("git.example.org", 443, "POST", "/me/repo.git/git-receive-pack")).toEqual({ ok: true });
    expect(r.check("git.example.org", 443, "GET", "/me/repo.git")).toEqual({ ok: true });
    const refused = r.check("api.example.org", 443, "POST", "/v1/users");
    expect(refused).toEqual({
      ok: false,
      reason:
        "POST /v1/users: no request rule allows it (rules: GET,HEAD@api.example.org:443,80/v1/; --allow-request)",
    });
    expect(r.governs("api.example.org", 80)).toBe(true);
    expect(r.governs("api.example.org", 8443)).toBe(false);
  });

  it.each([
    ["/me/repo.git.evil/git-receive-pack"],
    ["/me/repo.git/../other.git/git-receive-pack"],
    ["/me/repo.git/%2e%2e/other.git/git-receive-pack"],
    ["/me/repo.git%2F..%2Fother.git/git-receive-pack"],
    ["/me/repo.git\\..\\other.git"],
    ["/me/other.git/git-receive-pack"],
  ])("refuses a way around a path prefix: %s", (path) => {
    const r = rules("GET,POST@git.example.org/me/repo.git");
    expect(r.check("git.example.org", 443, "POST", path).ok).toBe(false);
  });

  it("normalizes dot segments and refuses ambiguous slashes", () => {
    expect(normalizedPath("/a/./b/../c")).toBe("/a/c");
    expect(normalizedPath("/a/%2e%2e/c")).toBe("/c");
    expect(normalizedPath("/a%2fb")).toBeUndefined();
  });
});

describe("judgedPath: a request's path is judged only when every server reads it alike", () => {
  it.each([
    ["/v1/users?x=1&next=%2Fhome", "/v1/users"],
    ["/a/b/", "/a/b/"],
    ["/a%20b/caf%C3%A9", "/a%20b/caf%C3%A9"],
    ["/me/repo.git/info/refs?service=git-upload-pack", "/me/repo.git/info/refs"],
    ["/.well-known/x", "/.well-known/x"],
    ["/a/...", "/a/..."],
    ["/", "/"],
  ])("judges %s as %s", (target, path) => {
    expect(judgedPath(target)).toEqual({ ok: true, path });
  });

  it.each([
    ["/a//../b", "an empty segment"],
    ["/a/./b", "a dot segment"],
    ["/a/../b", "a dot segment"],
    ["/a/%2e%2E/b", "a dot segment"],
    ["/a/.%2e", "a dot segment"],
    ["/a/%ef%bc%8e%ef%bc%8e/b", "a dot segment"],
    ["/a/%e2%80%a5/b", "a dot segment"],
    ["/a/%c0%ae%c0%ae/b", "not UTF-8"],
    ["/a/..%2fb", "/, \\, ; or %"],
    ["/a/..%5Cb", "/, \\, ; or %"],
    ["/a/%252e%252e/b", "/, \\, ; or %"],
    ["/a/%ef%bc%8f", "/, \\, ; or %"],
    ["/a\\b", "a backslash"],
    ["/a/..;/b", "a ;parameter"],
    ["/a/%00/b", "control character"],
    ["/a/%u002e", "not an escape"],
    ["//host/a", "start with one /"],
    ["a/b", "start with one /"],
    ["/a#/../b", "a fragment"],
    ["/a/\u2025/b", "not printable ASCII"],
    ["/a b", "not printable ASCII"],
  ])("refuses %s (%s)", (target, why) => {
    const reading = judgedPath(target);
    expect(reading.ok).toBe(false);
    if (!reading.ok) expect(reading.reason).toContain(why);
  });

  it("a rule refuses such a path whatever its prefix, and says why", () => {
    const r = rules("GET@files.example.org/allowed/");
    expect(r.check("files.example.org", 443, "GET", "/allowed//../secret")).toEqual({
      ok: false,
      reason:
        "GET /allowed//../secret: its path holds an empty segment (//), which a server may read another way (rules: GET@files.example.org:443,80/allowed/; --allow-request)",
    });
    expect(r.check("files.example.org", 443, "GET", "/allowed/page?q=..%2F")).toEqual({ ok: true });
  });
});
