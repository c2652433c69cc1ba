/**
 * A PEP 503 simple index with one pure-Python wheel, written at test time (a wheel is a zip with a
 * dist-info folder: METADATA, WHEEL, RECORD), and one source distribution (a project pip builds a
 * wheel of, and keeps that wheel in its cache: `pip install --no-build-isolation`, since building in
 * isolation would make pip fetch setuptools from the index).
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { pack } from "tar-stream";
import { gated, type PrivateOrigin } from "./auth-gate.js";
import { type Origin, reply, replyCacheable, startOrigin } from "./origin-server.js";
import { storedZip, type ZipEntry } from "./stored-zip.js";

/** The project name as pip is asked for it. */
export const PIP_FIXTURE_PROJECT = "harness-fixture";
/** The import name, and what `harness_fixture.VALUE` holds. */
export const PIP_FIXTURE_MODULE = "harness_fixture";
export const PIP_FIXTURE_VALUE = "harness pip fixture ok";

/** The project pip gets as a source distribution, its import name, and its value. */
export const PIP_SDIST_PROJECT = "harness-fixture-sdist";
export const PIP_SDIST_MODULE = "harness_fixture_sdist";
export const PIP_SDIST_VALUE = "harness pip sdist fixture ok";

const VERSION = "1.0.0";
const WHEEL_NAME = `${PIP_FIXTURE_MODULE}-${VERSION}-py3-none-any.whl`;
const SDIST_NAME = `${PIP_SDIST_MODULE}-${VERSION}.tar.gz`;

export interface PipIndexStub extends Origin {
  /** `http://<hostname>:<port>/simple/`, for `pip --index-url`. */
  readonly indexUrl: string;
  /** Path of the wheel, to check the origin saw the download. */
  readonly wheelPath: string;
  /** Path of the source distribution. */
  readonly sdistPath: string;
  /** The sdist's sha256 (hex), as the project page's link gives it. */
  readonly sdistSha256: string;
}

function recordHash(data: Buffer): string {
  return `sha256=${createHash("sha256").update(data).digest("base64url")}`;
}

/** A wheel of `module` (project `project`) whose `VALUE` is `value`: the fixture's by default. */
export function fixtureWheel(
  value = PIP_FIXTURE_VALUE,
  project = PIP_FIXTURE_PROJECT,
  module = PIP_FIXTURE_MODULE,
): Buffer {
  const distInfo = `${module}-${VERSION}.dist-info`;
  const files: ZipEntry[] = [
    {
      name: `${module}/__init__.py`,
      data: Buffer.from(`VALUE = ${JSON.stringify(value)}\n`),
    },
    {
      name: `${distInfo}/METADATA`,
      data: Buffer.from(`Metadata-Version: 2.1\nName: ${project}\nVersion: ${VERSION}\n`),
    },
    {
      name: `${distInfo}/WHEEL`,
      data: Buffer.from(
        "Wheel-Version: 1.0\nGenerator: harness-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
      ),
    },
  ];
  const record = [
    ...files.map((f) => `${f.name},${recordHash(f.data)},${f.data.length}`),
    `${distInfo}/RECORD,,`,
  ].join("\n");
  return storedZip([...files, { name: `${distInfo}/RECORD`, data: Buffer.from(`${record}\n`) }]);
}

/** The source distribution: setup.py (setuptools), PKG-INFO and the module, as `sdist` makes them. */
export async function fixtureSdist(): Promise<Buffer> {
  const root = `${PIP_SDIST_MODULE}-${VERSION}`;
  const archive = pack();
  const files: [string, string][] = [
    [
      "setup.py",
      `from setuptools import setup\nsetup(name=${JSON.stringify(PIP_SDIST_PROJECT)}, version="${VERSION}", packages=[${JSON.stringify(PIP_SDIST_MODULE)}])\n`,
    ],
    ["PKG-INFO", `Metadata-Version: 2.1\nName: ${PIP_SDIST_PROJECT}\nVersion: ${VERSION}\n`],
    [`${PIP_SDIST_MODULE}/__init__.py`, `VALUE = ${JSON.stringify(PIP_SDIST_VALUE)}\n`],
  ];
  for (const [name, text] of files) archive.entry({ name: `${root}/${name}`, mode: 0o644 }, text);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

/** A project page as PEP 503 has it: one link, with the file's sha256. */
export function projectPage(path: string, name: string, sha256: string): string {
  return `<!DOCTYPE html>\n<html><body>\n<a href="${path}#sha256=${sha256}">${name}</a>\n</body></html>\n`;
}

/** Starts the index on 127.0.0.1:0; `hostname` is the name the sandbox will use for it. */
export async function startPipIndexStub(
  hostname: string,
  /** A private registry: TLS, credentials (auth-gate.ts). */
  options: PrivateOrigin = {},
): Promise<PipIndexStub> {
  const wheel = fixtureWheel();
  const wheelPath = `/packages/${WHEEL_NAME}`;
  const sha256 = createHash("sha256").update(wheel).digest("hex");
  const wheelPage = projectPage(wheelPath, WHEEL_NAME, sha256);
  const sdist = await fixtureSdist();
  const sdistPath = `/packages/${SDIST_NAME}`;
  const sdistSha256 = createHash("sha256").update(sdist).digest("hex");
  const sdistPage = projectPage(sdistPath, SDIST_NAME, sdistSha256);
  const file = "max-age=365000000, immutable, public";
  const origin = await startOrigin(
    gated((request, response) => {
      const path = (request.url ?? "").split("?")[0];
      // PyPI's cache headers: a project page for 10 minutes (pip revalidates it anyway), a file for good.
      if (path === `/simple/${PIP_FIXTURE_PROJECT}/`)
        replyCacheable(request, response, wheelPage, "text/html", "max-age=600, public");
      else if (path === `/simple/${PIP_SDIST_PROJECT}/`)
        replyCacheable(request, response, sdistPage, "text/html", "max-age=600, public");
      else if (path === wheelPath) replyCacheable(request, response, wheel, "application/octet-stream", file);
      else if (path === sdistPath) replyCacheable(request, response, sdist, "application/octet-stream", file);
      else reply(response, undefined, "");
    }, options),
    options.tls,
    options.address,
  );
  return {
    ...origin,
    indexUrl: `${options.tls ? "https" : "http"}://${hostname}:${origin.port}/simple/`,
    wheelPath,
    sdistPath,
    sdistSha256,
  };
}
