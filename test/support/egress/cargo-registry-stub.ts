/**
 * A sparse cargo registry (its `config.json`, the index file of one crate, the crate's download)
 * serving one small crate built at test time: a gzipped tar of `NAME-VERSION/`, its sha256 in the
 * index entry, as cargo checks it.
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { pack } from "tar-stream";
import { type Origin, reply, startOrigin } from "./origin-server.js";

export const CARGO_FIXTURE_CRATE = "harnessfix";
export const CARGO_FIXTURE_VERSION = "1.0.0";
/** What `harnessfix::answer()` returns. */
export const CARGO_FIXTURE_ANSWER = "harness cargo fixture ok";

export interface CargoRegistryStub extends Origin {
  /** `sparse+http://<hostname>:<port>/index/`, for a source's `registry`. */
  readonly indexUrl: string;
  /** Path of the crate's download, to check the origin saw it. */
  readonly cratePath: string;
}

async function crateFile(): Promise<Buffer> {
  const root = `${CARGO_FIXTURE_CRATE}-${CARGO_FIXTURE_VERSION}`;
  const archive = pack();
  archive.entry(
    { name: `${root}/Cargo.toml`, mode: 0o644 },
    `[package]\nname = "${CARGO_FIXTURE_CRATE}"\nversion = "${CARGO_FIXTURE_VERSION}"\nedition = "2021"\n`,
  );
  archive.entry(
    { name: `${root}/src/lib.rs`, mode: 0o644 },
    `/// Says the crate was fetched.\npub fn answer() -> &'static str {\n    ${JSON.stringify(CARGO_FIXTURE_ANSWER)}\n}\n`,
  );
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

export async function startCargoRegistryStub(
  hostname: string,
  address = "127.0.0.1",
): Promise<CargoRegistryStub> {
  const crate = await crateFile();
  const cratePath = `/dl/${CARGO_FIXTURE_CRATE}/${CARGO_FIXTURE_VERSION}.crate`;
  let config = "";
  const entry = `${JSON.stringify({
    name: CARGO_FIXTURE_CRATE,
    vers: CARGO_FIXTURE_VERSION,
    deps: [],
    cksum: createHash("sha256").update(crate).digest("hex"),
    features: {},
    yanked: false,
  })}\n`;
  const indexPath = `/index/${CARGO_FIXTURE_CRATE.slice(0, 2)}/${CARGO_FIXTURE_CRATE.slice(2, 4)}/${CARGO_FIXTURE_CRATE}`;
  const origin = await startOrigin(
    (request, response) => {
      const path = (request.url ?? "").split("?")[0];
      if (path === "/index/config.json") reply(response, config, "application/json");
      else if (path === indexPath) reply(response, entry, "text/plain");
      else if (path === cratePath) reply(response, crate, "application/octet-stream");
      else reply(response, undefined, "");
    },
    undefined,
    address,
  );
  const base = `http://${hostname}:${origin.port}`;
  config = JSON.stringify({ dl: `${base}/dl/{crate}/{version}.crate` });
  return { ...origin, indexUrl: `sparse+${base}/index/`, cratePath };
}
