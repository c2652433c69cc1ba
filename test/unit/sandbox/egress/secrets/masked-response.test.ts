/** How a request to a secret's host is shaped, and which responses from it cannot be checked whole. */
import { describe, expect, it } from "vitest";
import {
  maskedResponse,
  requestForMasking,
} from "../../../../../src/sandbox/egress/secrets/masked-response.js";
import { SecretBook } from "../../../../../src/sandbox/egress/secrets/secret-book.js";
import { SecretValue } from "../../../../../src/sandbox/egress/secrets/secret-grant.js";

const book = new SecretBook([
  { name: "T", host: "api.example.org", inBody: false, value: new SecretValue("T", "tok_REAL/value+1") },
]);

describe("requestForMasking", () => {
  it("drops Range and If-Range, and narrows Accept-Encoding to what the gateway undoes", () => {
    expect(
      requestForMasking([
        "Range",
        "bytes=0-9",
        "If-Range",
        '"etag"',
        "Accept-Encoding",
        "zstd, br;q=0.9, gzip, compress, *",
        "X-Kept",
        "1",
      ]),
    ).toEqual(["Accept-Encoding", "br;q=0.9, gzip", "X-Kept", "1"]);
    expect(requestForMasking(["accept-encoding", "zstd"])).toEqual(["accept-encoding", "identity"]);
  });
});

describe("maskedResponse", () => {
  const decide = (headers: string[], wire: string[] = headers, status = 200, method = "GET") =>
    maskedResponse(book, ["T"], headers, wire, method, status);

  it.each([
    ["a 206", [], [], 206],
    ["a Content-Range", ["Content-Range", "bytes 0-9/100"], [], 200],
    ["zstd", ["Content-Encoding", "zstd"], [], 200],
    ["compress under gzip", ["Content-Encoding", "compress, gzip"], [], 200],
    ["a transfer coding it cannot undo", [], ["Transfer-Encoding", "x-pack, chunked"], 200],
    ["chunked not last", [], ["Transfer-Encoding", "chunked, gzip"], 200],
  ])("cuts off %s", (_what, headers, wire, status) => {
    expect(decide(headers, [...headers, ...wire], status).ok).toBe(false);
  });

  it("undoes transfer codings after content codings, last applied first", () => {
    const decided = decide(
      ["Content-Encoding", "gzip"],
      ["Content-Encoding", "gzip", "Transfer-Encoding", "br, chunked"],
    );
    expect(decided.ok && decided.body.length).toBe(3);
    expect(decided.ok && decided.headers).toEqual([]);
  });

  it("masks the headers of a HEAD answer and has no body to undo", () => {
    const decided = decide(
      ["X-Echo", Buffer.from("u:tok_REAL/value+1").toString("base64"), "Content-Encoding", "zstd"],
      [],
      200,
      "HEAD",
    );
    expect(decided.ok).toBe(true);
    if (decided.ok) {
      expect(Buffer.from(decided.headers[1] ?? "", "base64").toString()).toMatch(/^u:harness-secret-T-/);
      expect(decided.body).toEqual([]);
    }
  });
});
