import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, expect, it } from "vitest";
import { SecretBook, SecretLeak } from "../../../../../src/sandbox/egress/secrets/secret-book.js";
import { parseSecretSpec, SecretValue } from "../../../../../src/sandbox/egress/secrets/secret-grant.js";

const VALUE = "tok_REAL/value+1";

function book(inBody = false): { book: SecretBook; placeholder: string } {
  const b = new SecretBook([
    { name: "API_TOKEN", host: "api.example.org:443", inBody, value: new SecretValue("API_TOKEN", VALUE) },
  ]);
  const placeholder = (b.env()[0] ?? "").split("=")[1] ?? "";
  return { book: b, placeholder };
}

async function through(streams: NodeJS.ReadWriteStream[], chunks: string[]): Promise<string> {
  const out: Buffer[] = [];
  const run = pipeline as unknown as (...streams: unknown[]) => Promise<void>;
  await run(
    Readable.from(chunks.map((c) => Buffer.from(c))),
    ...streams,
    async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) out.push(chunk);
    },
  );
  return Buffer.concat(out).toString();
}

describe("parseSecretSpec", () => {
  it("reads NAME@HOST in the allow-host syntax", () => {
    const parsed = parseSecretSpec("NPM_TOKEN@registry.example.org:8443");
    expect(parsed).toMatchObject({
      ok: true,
      spec: { name: "NPM_TOKEN", host: "registry.example.org:8443" },
    });
  });
  it.each(["NPM_TOKEN", "1X@host", "A-B@host", "X@*.example.org", "X@http://example.org/"])(
    "refuses %s",
    (text) => {
      expect(parseSecretSpec(text).ok).toBe(false);
    },
  );
  it("keeps the value out of JSON, strings and inspect", async () => {
    const value = new SecretValue("X", "hunter2");
    const { inspect } = await import("node:util");
    expect(JSON.stringify({ value })).not.toContain("hunter2");
    expect(`${value}`).not.toContain("hunter2");
    expect(inspect({ value })).not.toContain("hunter2");
  });
});

describe("SecretBook", () => {
  it("gives a placeholder unique to the run, never the value", () => {
    const a = book().placeholder;
    const b = book().placeholder;
    expect(a).toMatch(/^harness-secret-API_TOKEN-[0-9a-f]{32,34}$/);
    expect(a).not.toBe(b);
  });

  it("swaps the placeholder for the value on the way to its own host: headers, Basic, target", () => {
    const { book: b, placeholder } = book();
    const basic = Buffer.from(`x-access-token:${placeholder}`).toString("base64");
    const decision = b.decideHead("API.example.org", 443, `/v1?token=${placeholder}`, [
      "Authorization",
      `Bearer ${placeholder}`,
      "X-Other",
      `Basic ${basic}`,
    ]);
    expect(decision).toEqual({
      ok: true,
      target: `/v1?token=${encodeURIComponent(VALUE)}`,
      rawHeaders: ["Authorization", `Bearer ${VALUE}`, "X-Other", `Basic ${basic}`],
      used: ["API_TOKEN"],
    });
    const git = b.decideHead("api.example.org", 443, "/repo.git/info/refs", [
      "Authorization",
      `Basic ${basic}`,
    ]);
    expect(git.ok && git.rawHeaders[1]).toBe(
      `Basic ${Buffer.from(`x-access-token:${VALUE}`).toString("base64")}`,
    );
  });

  it("does not swap on another port of the same name", () => {
    const { book: b, placeholder } = book();
    const decision = b.decideHead("api.example.org", 80, "/", ["Authorization", `Bearer ${placeholder}`]);
    expect(decision).toMatchObject({ ok: false, secret: "API_TOKEN" });
  });

  it.each([
    ["a header", (p: string) => ({ target: "/", headers: ["X-Leak", p] })],
    ["the path", (p: string) => ({ target: `/${p}`, headers: [] })],
    [
      "the query, percent-encoded",
      (p: string) => ({
        target: `/?q=${[...p].map((c) => `%${c.charCodeAt(0).toString(16)}`).join("")}`,
        headers: [],
      }),
    ],
    [
      "Basic auth",
      (p: string) => ({
        target: "/",
        headers: ["Authorization", `Basic ${Buffer.from(`u:${p}`).toString("base64")}`],
      }),
    ],
    [
      "base64 at offset 1",
      (p: string) => ({ target: "/", headers: ["X", Buffer.from(`a${p}zz`).toString("base64")] }),
    ],
    [
      "base64 at offset 2, url-safe",
      (p: string) => ({ target: `/${Buffer.from(`ab${p}`).toString("base64url")}`, headers: [] }),
    ],
    ["hex", (p: string) => ({ target: `/${Buffer.from(p).toString("hex")}`, headers: [] })],
    ["upper case", (p: string) => ({ target: "/", headers: ["X", p.toUpperCase()] })],
  ])(
    "refuses the placeholder to another host in %s, naming the secret and host, never the value",
    (_what, make) => {
      const { book: b, placeholder } = book();
      const { target, headers } = make(placeholder);
      const decision = b.decideHead("other.example.org", 443, target, headers);
      expect(decision.ok).toBe(false);
      if (decision.ok) return;
      expect(decision.reason).toContain("API_TOKEN");
      expect(decision.reason).toContain("other.example.org");
      expect(decision.reason).not.toContain(VALUE);
    },
  );

  it("fails a body carrying the placeholder to another host, split across chunks", async () => {
    const { book: b, placeholder } = book();
    const body = b.requestBody("other.example.org", 443);
    const encoded = Buffer.from(`xx${placeholder}`).toString("base64");
    await expect(
      through(body?.streams ?? [], [`data=${encoded.slice(0, 20)}`, encoded.slice(20)]),
    ).rejects.toBeInstanceOf(SecretLeak);
    expect(b.requestBody("api.example.org", 443)).toBeUndefined();
  });

  it("swaps in bodies only when opted in", async () => {
    const { book: b, placeholder } = book(true);
    const body = b.requestBody("api.example.org", 443);
    const half = Math.floor(placeholder.length / 2);
    expect(
      await through(body?.streams ?? [], [
        `{"t":"${placeholder.slice(0, half)}`,
        `${placeholder.slice(half)}"}`,
      ]),
    ).toBe(`{"t":"${VALUE}"}`);
  });

  it("takes the value back out of response headers and bodies", async () => {
    const { book: b, placeholder } = book();
    expect(b.maskHeaders(["X-Echo", `got ${VALUE}`], ["API_TOKEN"])).toEqual([
      "X-Echo",
      `got ${placeholder}`,
    ]);
    expect(
      await through([b.maskBody(["API_TOKEN"])], ["echo: tok_RE", "AL/value+1 and tok_REAL/value+1"]),
    ).toBe(`echo: ${placeholder} and ${placeholder}`);
  });
});
