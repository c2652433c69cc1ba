/**
 * An npm registry with one tiny package, built at test time. The packument's tarball URL names the
 * registry by the name the sandbox uses (`http://<hostname>:<port>/…`), as a real registry names
 * itself, so the download goes through the gateway too.
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { pack } from "tar-stream";
import { gated, type PrivateOrigin } from "./auth-gate.js";
import { type Origin, reply, replyCacheable, startOrigin } from "./origin-server.js";

export const NPM_FIXTURE_PACKAGE = "harness-fixture-pkg";
export const NPM_FIXTURE_VERSION = "1.0.0";
/** What `require("harness-fixture-pkg")` returns. */
export const NPM_FIXTURE_EXPORT = "harness npm fixture ok";

export interface NpmRegistryStub extends Origin {
  /** `http://<hostname>:<port>/`, for `npm --registry`. */
  readonly url: string;
  /** Path of the tarball, to check the origin saw the download. */
  readonly tarballPath: string;
  /** Size of the tarball: a gateway record of its download carries at least this many bytes down. */
  readonly tarballBytes: number;
  /** The tarball's URL and integrity, as a package-lock.json records them. */
  readonly tarballUrl: string;
  readonly integrity: string;
}

/** The package's tarball; `value` is what its index.js exports (the fixture's by default). */
export async function packageTarball(value = NPM_FIXTURE_EXPORT): Promise<Buffer> {
  const archive = pack();
  const manifest = JSON.stringify({
    name: NPM_FIXTURE_PACKAGE,
    version: NPM_FIXTURE_VERSION,
    main: "index.js",
    license: "MIT",
  });
  archive.entry({ name: "package/package.json", mode: 0o644 }, manifest);
  archive.entry({ name: "package/index.js", mode: 0o644 }, `module.exports = ${JSON.stringify(value)};\n`);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

/** Starts the registry on 127.0.0.1:0; `hostname` is the name the sandbox will use for it. */
export async function startNpmRegistryStub(
  hostname: string,
  /** A private registry: TLS, credentials (auth-gate.ts). */
  options: PrivateOrigin = {},
): Promise<NpmRegistryStub> {
  const tarball = await packageTarball();
  const tarballPath = `/${NPM_FIXTURE_PACKAGE}/-/${NPM_FIXTURE_PACKAGE}-${NPM_FIXTURE_VERSION}.tgz`;
  let packument = "";
  const origin = await startOrigin(
    gated((request, response) => {
      // npm asks for the packument with an encoded scope slash too; this package has no scope.
      const path = (request.url ?? "").split("?")[0];
      // The public registry's cache headers: a packument is fresh for 5 minutes, a tarball for good.
      if (path === `/${NPM_FIXTURE_PACKAGE}`)
        replyCacheable(request, response, packument, "application/json", "public, max-age=300");
      else if (path === tarballPath)
        replyCacheable(
          request,
          response,
          tarball,
          "application/octet-stream",
          "public, immutable, max-age=31557600",
        );
      else reply(response, undefined, "");
    }, options),
    options.tls,
    options.address,
  );
  const url = `${options.tls ? "https" : "http"}://${hostname}:${origin.port}/`;
  packument = packumentFor(url, tarball);
  return {
    ...origin,
    url,
    tarballPath,
    tarballBytes: tarball.length,
    tarballUrl: tarballUrl(url),
    integrity: integrityOf(tarball),
  };
}

/** The sha512 integrity npm checks a tarball against. */
function integrityOf(tarball: Buffer): string {
  return `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
}

/** Where a registry at `url` serves the package's tarball. */
export function tarballUrl(url: string): string {
  return `${url}${NPM_FIXTURE_PACKAGE}/-/${NPM_FIXTURE_PACKAGE}-${NPM_FIXTURE_VERSION}.tgz`;
}

/** The packument a registry at `url` serves for `tarball`. */
export function packumentFor(url: string, tarball: Buffer): string {
  // npm refuses a tarball whose integrity does not match, so both sums are the real ones.
  return JSON.stringify({
    name: NPM_FIXTURE_PACKAGE,
    "dist-tags": { latest: NPM_FIXTURE_VERSION },
    versions: {
      [NPM_FIXTURE_VERSION]: {
        name: NPM_FIXTURE_PACKAGE,
        version: NPM_FIXTURE_VERSION,
        main: "index.js",
        dist: {
          tarball: tarballUrl(url),
          shasum: createHash("sha1").update(tarball).digest("hex"),
          integrity: integrityOf(tarball),
        },
      },
    },
  });
}
