/**
 * Round 4, finding 1: `--devcontainer`'s build paths were checked with realpath when devcontainer.json
 * was read, and read by path later: a folder swapped for a symlink in between was followed, and a
 * root-only host file went into the sandbox image (3 wins in 11 tries). Here the swap is made in
 * that gap, every time: devcontainer.json is loaded (the check), the workspace is changed as a task
 * could change it, then `DockerSandbox.open` builds. From the host: the open is refused in one
 * line, and no image was built from the Dockerfile (each carries a label of this run's).
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDevcontainer } from "../../../src/devcontainer/load-devcontainer.js";
import { ConfigError } from "../../../src/errors.js";
import { ensureSandboxImage } from "../../../src/sandbox/docker/container/image.js";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

const BUILD_LABEL = "dev.harness.test-context";
const RUN_ID = `${process.pid}-${randomBytes(4).toString("hex")}`;
const SECRET = `root-only-host-file-${randomBytes(6).toString("hex")}`;

describe.skipIf(skipDocker)("adversarial: a devcontainer build path swapped after it was checked", () => {
  const docker = new Docker();
  let base: string;
  /** Outside every workspace, root's only (stands in for /root): what the build must never read. */
  let host: string;

  beforeAll(async () => {
    base = await ensureSandboxImage(docker);
    host = realpathSync(mkdtempSync(join(tmpdir(), "harness-devc-host-")));
    chmodSync(host, 0o700);
    mkdirSync(join(host, "ctx"));
    writeFileSync(join(host, "ctx", "secret"), SECRET, { mode: 0o600 });
    writeFileSync(join(host, "secret"), SECRET, { mode: 0o600 });
    writeFileSync(join(host, "Dockerfile"), dockerfile(), { mode: 0o600 });
  }, 120_000);

  afterAll(async () => {
    rmSync(host, { recursive: true, force: true });
    for (const image of await builtImages())
      await docker
        .getImage(image)
        .remove({ force: true })
        .catch(() => {});
  });

  function dockerfile(): string {
    return `FROM ${base}\nLABEL ${BUILD_LABEL}=${RUN_ID}\nUSER root\nCOPY secret /opt/secret\nRUN chmod 644 /opt/secret\n`;
  }

  async function builtImages(): Promise<string[]> {
    const images = await docker.listImages({ filters: { label: [`${BUILD_LABEL}=${RUN_ID}`] } });
    return images.map((image) => image.Id);
  }

  /** Whether /opt/secret in an image is the host's secret (read from a created, never started container). */
  async function holdsSecret(image: string): Promise<boolean> {
    const container = await docker.createContainer({
      Image: image,
      Entrypoint: ["true"],
      NetworkDisabled: true,
    });
    try {
      const archive = (await container.getArchive({ path: "/opt/secret" })) as NodeJS.ReadableStream;
      let text = "";
      for await (const chunk of archive) text += (chunk as Buffer).toString("latin1");
      return text.includes(SECRET);
    } finally {
      await container.remove({ force: true });
    }
  }

  /**
   * Loads devcontainer.json from a workspace `setUp` fills, runs `swap` (the task's move), then
   * opens: the open's error, and the host's secret if any image built from it holds it.
   */
  async function race(
    json: object,
    setUp: (ws: string) => void,
    swap: (ws: string) => void,
  ): Promise<{ error: unknown; leaked: string[]; built: number }> {
    using ws = makeWorkspace("harness-devc-ctx-");
    mkdirSync(join(ws.path, ".devcontainer"));
    writeFileSync(join(ws.path, ".devcontainer", "devcontainer.json"), JSON.stringify(json));
    setUp(ws.path);
    const devcontainer = loadDevcontainer(ws.path, undefined);
    swap(ws.path);
    let error: unknown;
    try {
      const sandbox = await DockerSandbox.open({ workspace: ws.path, devcontainer, removeOnStop: true });
      await sandbox.stop();
    } catch (caught) {
      error = caught;
    }
    // Every image (or layer of a failed build) made from it: the host's secret must be in none.
    const leaked: string[] = [];
    const images = await builtImages();
    for (const image of images) {
      if (await holdsSecret(image).catch(() => false)) leaked.push(image);
      await docker.getImage(image).remove({ force: true });
    }
    return { error, leaked, built: images.length };
  }

  /** Moves `path` aside and puts a symlink to `target` in its place. */
  const swapForLink = (path: string, target: string) => {
    renameSync(path, `${path}.checked`);
    symlinkSync(target, path);
  };

  it("the context folder, swapped for a link to a root-only host folder", async () => {
    const { error, leaked, built } = await race(
      { build: { dockerfile: "Dockerfile", context: "../ctx" } },
      (ws) => {
        writeFileSync(join(ws, ".devcontainer", "Dockerfile"), dockerfile());
        mkdirSync(join(ws, "ctx"));
        writeFileSync(join(ws, "ctx", "secret"), "harmless");
      },
      (ws) => swapForLink(join(ws, "ctx"), join(host, "ctx")),
    );
    expect({ leaked, built }).toEqual({ leaked: [], built: 0 });
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^build\.context .*\/ctx: ctx is a symlink now.*not followed/);
  }, 180_000);

  it("a folder above the context, swapped for a link", async () => {
    const { error, leaked, built } = await race(
      { build: { dockerfile: "Dockerfile", context: "../a/ctx" } },
      (ws) => {
        writeFileSync(join(ws, ".devcontainer", "Dockerfile"), dockerfile());
        mkdirSync(join(ws, "a", "ctx"), { recursive: true });
        writeFileSync(join(ws, "a", "ctx", "secret"), "harmless");
      },
      (ws) => swapForLink(join(ws, "a"), host),
    );
    expect({ leaked, built }).toEqual({ leaked: [], built: 0 });
    expect((error as Error).message).toMatch(/a is a symlink now/);
  }, 180_000);

  it("the Dockerfile, outside the context, swapped for a link to a root-only host file", async () => {
    const { error, leaked, built } = await race(
      { build: { dockerfile: "Dockerfile", context: "../ctx" } },
      (ws) => {
        writeFileSync(join(ws, ".devcontainer", "Dockerfile"), "FROM scratch\n");
        mkdirSync(join(ws, "ctx"));
        writeFileSync(join(ws, "ctx", "secret"), "harmless");
      },
      (ws) => {
        rmSync(join(ws, ".devcontainer", "Dockerfile"));
        symlinkSync(join(host, "Dockerfile"), join(ws, ".devcontainer", "Dockerfile"));
      },
    );
    // The host's Dockerfile COPYs `secret` from the (harmless) context: what matters is that it is
    // never the Dockerfile built (only it carries the label).
    expect({ leaked, built }).toEqual({ leaked: [], built: 0 });
    expect((error as Error).message).toMatch(/build\.dockerfile .* is not a regular file .*symlink/);
  }, 180_000);

  it("the Dockerfile's folder, outside the context, swapped for a link", async () => {
    const { error, leaked, built } = await race(
      { build: { dockerfile: "../df/Dockerfile", context: "../ctx" } },
      (ws) => {
        mkdirSync(join(ws, "df"));
        writeFileSync(join(ws, "df", "Dockerfile"), "FROM scratch\n");
        mkdirSync(join(ws, "ctx"));
        writeFileSync(join(ws, "ctx", "secret"), "harmless");
      },
      (ws) => swapForLink(join(ws, "df"), host),
    );
    expect({ leaked, built }).toEqual({ leaked: [], built: 0 });
    expect((error as Error).message).toMatch(/df is a symlink now/);
  }, 180_000);

  it("a file in the context swapped for a link: packed as the link, which the builder keeps inside", async () => {
    const { error, leaked } = await race(
      { build: { dockerfile: "Dockerfile", context: "../ctx" } },
      (ws) => {
        writeFileSync(join(ws, ".devcontainer", "Dockerfile"), dockerfile());
        mkdirSync(join(ws, "ctx"));
        writeFileSync(join(ws, "ctx", "secret"), "harmless");
      },
      (ws) => {
        rmSync(join(ws, "ctx", "secret"));
        symlinkSync(join(host, "secret"), join(ws, "ctx", "secret"));
      },
    );
    expect(leaked).toEqual([]);
    // The build fails: COPY of a link to an absolute path resolves inside the context, to nothing.
    expect((error as Error).message).toMatch(/building the devcontainer image .* failed/);
  }, 180_000);
});
