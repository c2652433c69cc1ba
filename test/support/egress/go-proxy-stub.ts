/**
 * A Go module proxy (GOPROXY protocol: `$module/@v/list`, `.info`, `.mod`, `.zip`) serving one small
 * module, its zip built at test time, and the go.sum lines that vouch for it (the `h1:` hashes the
 * go command checks a download against, computed as golang.org/x/mod/sumdb/dirhash does).
 */
import { createHash } from "node:crypto";
import { type Origin, reply, startOrigin } from "./origin-server.js";
import { storedZip } from "./stored-zip.js";

export const GO_FIXTURE_MODULE = "example.com/harnessfix";
export const GO_FIXTURE_VERSION = "v1.0.0";
/** What `harnessfix.Answer()` returns. */
export const GO_FIXTURE_ANSWER = "harness go fixture ok";

export interface GoProxyStub extends Origin {
  /** `http://<hostname>:<port>`, for GOPROXY. */
  readonly url: string;
  /** The module's two go.sum lines. */
  readonly goSum: string;
}

/** dirhash.Hash1: sha256 over "HEX  NAME\n" lines of the files, by name. */
function hash1(files: ReadonlyArray<{ name: string; data: Buffer }>): string {
  const lines = [...files]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((f) => `${createHash("sha256").update(f.data).digest("hex")}  ${f.name}\n`)
    .join("");
  return `h1:${createHash("sha256").update(lines).digest("base64")}`;
}

export async function startGoProxyStub(hostname: string, address = "127.0.0.1"): Promise<GoProxyStub> {
  const goMod = Buffer.from(`module ${GO_FIXTURE_MODULE}\n\ngo 1.21\n`);
  const prefix = `${GO_FIXTURE_MODULE}@${GO_FIXTURE_VERSION}/`;
  const files = [
    { name: `${prefix}go.mod`, data: goMod },
    {
      name: `${prefix}harnessfix.go`,
      data: Buffer.from(
        `// Package harnessfix is harness's test module.\npackage harnessfix\n\n// Answer says the module was fetched.\nfunc Answer() string { return ${JSON.stringify(GO_FIXTURE_ANSWER)} }\n`,
      ),
    },
  ];
  const zip = storedZip(files);
  const base = `/${GO_FIXTURE_MODULE}/@v/`;
  const served: Record<string, [Buffer | string, string]> = {
    [`${base}list`]: [`${GO_FIXTURE_VERSION}\n`, "text/plain"],
    [`${base}${GO_FIXTURE_VERSION}.info`]: [
      JSON.stringify({ Version: GO_FIXTURE_VERSION, Time: "2024-01-01T00:00:00Z" }),
      "application/json",
    ],
    [`${base}${GO_FIXTURE_VERSION}.mod`]: [goMod, "text/plain"],
    [`${base}${GO_FIXTURE_VERSION}.zip`]: [zip, "application/zip"],
  };
  const origin = await startOrigin(
    (request, response) => {
      const found = served[(request.url ?? "").split("?")[0] ?? ""];
      reply(response, found?.[0], found?.[1] ?? "text/plain");
    },
    undefined,
    address,
  );
  const goSum = [
    `${GO_FIXTURE_MODULE} ${GO_FIXTURE_VERSION} ${hash1(files)}`,
    `${GO_FIXTURE_MODULE} ${GO_FIXTURE_VERSION}/go.mod ${hash1([{ name: "go.mod", data: goMod }])}`,
  ].join("\n");
  return { ...origin, url: `http://${hostname}:${origin.port}`, goSum: `${goSum}\n` };
}
