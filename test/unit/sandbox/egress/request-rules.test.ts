import { describe, expect, it } from "vitest";
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
