/**
 * devcontainer.json's `remoteUser`/`containerUser` as the "uid:gid" commands run as, looked up in
 * the image's own /etc/passwd (read from a created, never started container: nothing in the image
 * runs). Root, in any spelling, is never the answer: then the workspace owner stays the user.
 */
import type { Readable } from "node:stream";
import type Docker from "dockerode";
import { extract as tarExtract } from "tar-stream";
import { SandboxError } from "../../../errors.js";
import { parseSandboxUser } from "../../sandbox-user.js";

/** /etc/passwd is a few KiB; a bigger one is not read past this. */
const MAX_PASSWD_BYTES = 1024 * 1024;

export type ImageUser = { ok: true; user: string } | { ok: false; reason: string };

/** `name` (a user name or a decimal uid) in `image`: its "uid:gid", or why it cannot be used. */
export async function resolveImageUser(docker: Docker, image: string, name: string): Promise<ImageUser> {
  const passwd = await readImageFile(docker, image, "/etc/passwd");
  return userFromPasswd(passwd ?? "", name);
}

/** The uid:gid `name` has in `passwd` (a numeric name needs no entry: its gid is then the uid). */
export function userFromPasswd(passwd: string, name: string): ImageUser {
  const entries = passwd
    .split("\n")
    .map((line) => line.split(":"))
    .filter((fields) => fields.length >= 4);
  const numeric = /^[0-9]+$/.test(name);
  const entry = entries.find((fields) => (numeric ? fields[2] === name : fields[0] === name));
  if (entry === undefined && !numeric) {
    return { ok: false, reason: `user '${name}' is not in the image's /etc/passwd` };
  }
  const ids = entry === undefined ? `${name}:${name}` : `${entry[2]}:${entry[3]}`;
  const parsed = parseSandboxUser(ids);
  if (!parsed.ok) return { ok: false, reason: `user '${name}' (${ids}) ${parsed.reason}` };
  return { ok: true, user: parsed.user };
}

/** A regular file's text from the image, or undefined when it is not there (or not a regular file). */
async function readImageFile(docker: Docker, image: string, path: string): Promise<string | undefined> {
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: ["true"],
    Cmd: [],
    NetworkDisabled: true,
    Labels: { "dev.harness.devcontainer-probe": "1" },
  });
  try {
    const archive = (await container.getArchive({ path }).catch(() => undefined)) as Readable | undefined;
    return archive === undefined ? undefined : await firstRegularFile(archive);
  } catch (error) {
    throw new SandboxError(`reading ${path} from image '${image}': ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    await container.remove({ force: true }).catch(() => {});
  }
}

function firstRegularFile(archive: Readable): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const extract = tarExtract();
    let text: string | undefined;
    extract.on("entry", (header, stream, next) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on("data", (data: unknown) => {
        const chunk = data as Buffer;
        size += chunk.length;
        if (text === undefined && header.type === "file" && size <= MAX_PASSWD_BYTES) chunks.push(chunk);
      });
      stream.on("end", () => {
        if (text === undefined && header.type === "file") text = Buffer.concat(chunks).toString("utf8");
        next();
      });
      stream.resume();
    });
    extract.on("finish", () => resolve(text));
    extract.on("error", reject);
    archive.on("error", reject);
    archive.pipe(extract);
  });
}
