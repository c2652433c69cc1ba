/**
 * A PEP 503 simple index with one pure-Python wheel, written at test time (a wheel is a zip with a
 * dist-info folder: METADATA, WHEEL, RECORD). A wheel, not an sdist: building an sdist would make
 * pip fetch setuptools from the index.
 */
import { createHash } from "node:crypto";
import { gated, type PrivateOrigin } from "./auth-gate.js";
import { type Origin, reply, replyCacheable, startOrigin } from "./origin-server.js";
import { storedZip, type ZipEntry } from "./stored-zip.js";

/** The project name as pip is asked for it. */
export const PIP_FIXTURE_PROJECT = "harness-fixture";
/** The import name, and what `harness_fixture.VALUE` holds. */
export const PIP_FIXTURE_MODULE = "harness_fixture";
export const PIP_FIXTURE_VALUE = "harness pip fixture ok";

const VERSION = "1.0.0";
const WHEEL_NAME = `${PIP_FIXTURE_MODULE}-${VERSION}-py3-none-any.whl`;

export interface PipIndexStub extends Origin {
  /** `http://<hostname>:<port>/simple/`, for `pip --index-url`. */
  readonly indexUrl: string;
  /** Path of the wheel, to check the origin saw the download. */
  readonly wheelPath: string;
}

function recordHash(data: Buffer): string {
  return `sha256=${createHash("sha256").update(data).digest("base64url")}`;
}

export function fixtureWheel(): Buffer {
  const distInfo = `${PIP_FIXTURE_MODULE}-${VERSION}.dist-info`;
  const files: ZipEntry[] = [
    {
      name: `${PIP_FIXTURE_MODULE}/__init__.py`,
      data: Buffer.from(`VALUE = ${JSON.stringify(PIP_FIXTURE_VALUE)}\n`),
    },
    {
      name: `${distInfo}/METADATA`,
      data: Buffer.from(`Metadata-Version: 2.1\nName: ${PIP_FIXTURE_PROJECT}\nVersion: ${VERSION}\n`),
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

/** Starts the index on 127.0.0.1:0; `hostname` is the name the sandbox will use for it. */
export async function startPipIndexStub(
  hostname: string,
  /** A private registry: TLS, credentials (auth-gate.ts). */
  options: PrivateOrigin = {},
): Promise<PipIndexStub> {
  const wheel = fixtureWheel();
  const wheelPath = `/packages/${WHEEL_NAME}`;
  const sha256 = createHash("sha256").update(wheel).digest("hex");
  const projectPage = `<!DOCTYPE html>\n<html><body>\n<a href="${wheelPath}#sha256=${sha256}">${WHEEL_NAME}</a>\n</body></html>\n`;
  const origin = await startOrigin(
    gated((request, response) => {
      const path = (request.url ?? "").split("?")[0];
      // PyPI's cache headers: a project page for 10 minutes (pip revalidates it anyway), a file for good.
      if (path === `/simple/${PIP_FIXTURE_PROJECT}/`)
        replyCacheable(request, response, projectPage, "text/html", "max-age=600, public");
      else if (path === wheelPath)
        replyCacheable(
          request,
          response,
          wheel,
          "application/octet-stream",
          "max-age=365000000, immutable, public",
        );
      else reply(response, undefined, "");
    }, options),
    options.tls,
    options.address,
  );
  return {
    ...origin,
    indexUrl: `${options.tls ? "https" : "http"}://${hostname}:${origin.port}/simple/`,
    wheelPath,
  };
}
