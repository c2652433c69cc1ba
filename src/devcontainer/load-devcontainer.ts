/**
 * `--devcontainer[=PATH]`: reads a devcontainer.json (JSONC) from the workspace and turns the parts
 * harness applies (image or build, containerEnv/remoteEnv, remoteUser/containerUser,
 * postCreateCommand) into a `DevcontainerRequest`. Untrusted input: the sandbox may have written the
 * file in an earlier run. So every path stays inside the workspace (no `..`, no absolute path, no
 * symlink out of it), `${...}` variables are never substituted (`${localEnv:X}` would copy the
 * host's environment in), and fields that would weaken the sandbox are left out with a line each.
 */
import { closeSync, constants as fs, fstatSync, openSync, readSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ConfigError } from "../errors.js";
import { type HostDir, HostPathError, markSandboxWritable, openHostDir } from "../host-files/host-path.js";
import type { DevcontainerBuild, DevcontainerRequest } from "../sandbox/sandbox-request.js";
import { asksForSomething, REFUSED_BUILD_FIELDS, REFUSED_FIELDS } from "./devcontainer-fields.js";
import { JsoncError, parseJsonc } from "./jsonc.js";
import { postCreateCommandLine } from "./post-create-command.js";

/** Where devcontainer.json is looked for when `--devcontainer` names no file. */
export const DEFAULT_DEVCONTAINER_FILES = [".devcontainer/devcontainer.json", ".devcontainer.json"];

/** A devcontainer.json is a few KiB; anything much larger is not one. */
const MAX_FILE_BYTES = 1024 * 1024;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The devcontainer request for `workspace`: `path` (relative to the current directory, as a flag's
 * path is) or the default files. Throws ConfigError for a file that is missing, outside the
 * workspace, not JSONC, or whose image/build/user/command fields have the wrong shape.
 */
export function loadDevcontainer(workspace: string, path: string | undefined): DevcontainerRequest {
  const root = realWorkspace(workspace);
  // The sandbox can write it: from here on nothing below it is reached through a link (host-path.ts).
  markSandboxWritable(root);
  const file =
    path === undefined ? defaultFile(root) : insideWorkspace(root, resolve(path), "--devcontainer");
  const json = readJsonc(file);
  const dir = dirname(file);
  const ignored: string[] = [];
  const ignore = (field: string, why: string) => ignored.push(`devcontainer.json: ${field} ignored: ${why}`);
  for (const [field, why] of Object.entries(REFUSED_FIELDS)) {
    if (asksForSomething(json[field])) ignore(field, why);
  }
  const image = optionalString(json, "image");
  const build = readBuild(root, dir, json, ignore);
  if (image === undefined && build === undefined) {
    throw new ConfigError(`${file}: harness needs an 'image' or a 'build' (with a Dockerfile)`);
  }
  if (image !== undefined && build !== undefined) ignore("image", "'build' is given, and is what runs");
  const user = optionalString(json, "remoteUser") ?? optionalString(json, "containerUser");
  const post = postCreateCommandLine(json["postCreateCommand"]);
  if (!post.ok) throw new ConfigError(`${file}: postCreateCommand ${post.reason}`);
  return {
    file,
    ...(build === undefined ? { image } : { build }),
    env: [...readEnv(json, "containerEnv", ignore), ...readEnv(json, "remoteEnv", ignore)],
    ...(user === undefined ? {} : { user }),
    ...(post.command === undefined ? {} : { postCreateCommand: post.command }),
    ignored,
  };
}

function realWorkspace(workspace: string): string {
  try {
    return realpathSync(workspace);
  } catch (error) {
    throw new ConfigError(`--devcontainer: workspace '${workspace}': ${(error as Error).message}`);
  }
}

function defaultFile(root: string): string {
  for (const name of DEFAULT_DEVCONTAINER_FILES) {
    try {
      return insideWorkspace(root, join(root, name), "--devcontainer");
    } catch {
      // Not there (or not usable): the next name.
    }
  }
  throw new ConfigError(
    `--devcontainer: no ${DEFAULT_DEVCONTAINER_FILES.join(" or ")} in the workspace '${root}' (or name the file: --devcontainer=PATH)`,
  );
}

/**
 * `path`'s real path, which must lie inside `root` (a real path): a symlink anywhere on the way
 * that leads out of the workspace is refused, as is a path that does not exist.
 */
export function insideWorkspace(root: string, path: string, what: string): string {
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    throw new ConfigError(`${what} '${path}': ${(error as Error).message}`);
  }
  const rel = relative(root, real);
  if (rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new ConfigError(`${what} '${path}' is outside the workspace ${root} (through a symlink or ..)`);
  }
  return real;
}

/**
 * The file's object. Its real path was checked to lie in the workspace; it is read through its
 * folder held open, reached one component at a time without following a link (a folder swapped
 * for a link since the check is refused, not followed), and without following a last symlink.
 */
function readJsonc(file: string): Record<string, unknown> {
  let text: string;
  let fd: number | undefined;
  let dir: HostDir | undefined;
  try {
    dir = openHostDir(dirname(file));
    fd = openSync(dir.at(basename(file)), fs.O_RDONLY | fs.O_NOFOLLOW | fs.O_NONBLOCK);
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new ConfigError(`${file}: not a regular file`);
    if (stat.size > MAX_FILE_BYTES) throw new ConfigError(`${file}: larger than ${MAX_FILE_BYTES} bytes`);
    const buffer = Buffer.alloc(stat.size);
    const read = readSync(fd, buffer, 0, stat.size, 0);
    text = buffer.subarray(0, read).toString("utf8");
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    // "not writing …" would mislead: this is a read, refused for the same reason.
    if (error instanceof HostPathError) throw new ConfigError(`${file}: not read: ${error.reason}`);
    throw new ConfigError(`${file}: ${(error as Error).message}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
    dir?.close();
  }
  let value: unknown;
  try {
    value = parseJsonc(text);
  } catch (error) {
    if (!(error instanceof JsoncError)) throw error;
    throw new ConfigError(`${file}: ${error.message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`${file}: must hold one JSON object`);
  }
  return value as Record<string, unknown>;
}

function optionalString(object: Record<string, unknown>, field: string): string | undefined {
  const value = object[field];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw new ConfigError(`devcontainer.json: '${field}' must be a non-empty string`);
  }
  return value;
}

/** `build` (or the older top-level `dockerFile` and `context`), its paths checked. */
function readBuild(
  root: string,
  dir: string,
  json: Record<string, unknown>,
  ignore: (field: string, why: string) => void,
): DevcontainerBuild | undefined {
  const raw = json["build"] ?? {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError("devcontainer.json: 'build' must be an object");
  }
  const build = raw as Record<string, unknown>;
  const dockerfile = optionalString(build, "dockerfile") ?? optionalString(json, "dockerFile");
  if (dockerfile === undefined) {
    if (json["build"] !== undefined) throw new ConfigError("devcontainer.json: 'build' needs a 'dockerfile'");
    return undefined;
  }
  for (const [field, why] of Object.entries(REFUSED_BUILD_FIELDS)) {
    if (asksForSomething(build[field])) ignore(`build.${field}`, why);
  }
  // Both relative to devcontainer.json's folder; the context defaults to that folder.
  const context = optionalString(build, "context") ?? optionalString(json, "context") ?? ".";
  const target = optionalString(build, "target");
  return {
    workspace: root,
    dockerfile: insideWorkspace(
      root,
      join(dir, relativePath(dockerfile, "build.dockerfile")),
      "build.dockerfile",
    ),
    context: insideWorkspace(root, join(dir, relativePath(context, "build.context")), "build.context"),
    args: readStringMap(build["args"], "build.args"),
    ...(target === undefined ? {} : { target }),
  };
}

/**
 * A relative path: what a build path may be. `..` is fine while the real path stays inside the
 * workspace (`"context": ".."` is the usual way to build from the project's root): insideWorkspace checks.
 */
function relativePath(path: string, field: string): string {
  if (isAbsolute(path)) {
    throw new ConfigError(
      `devcontainer.json: ${field} '${path}' must be a path relative to devcontainer.json's folder, inside the workspace`,
    );
  }
  return path;
}

function readStringMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`devcontainer.json: '${field}' must be an object of strings`);
  }
  const map: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== "string")
      throw new ConfigError(`devcontainer.json: ${field}.${key} must be a string`);
    map[key] = item;
  }
  return map;
}

/** `containerEnv`/`remoteEnv` as `KEY=value`; an entry with a `${...}` variable is left out. */
function readEnv(
  json: Record<string, unknown>,
  field: string,
  ignore: (field: string, why: string) => void,
): string[] {
  const entries: string[] = [];
  for (const [key, value] of Object.entries(readStringMap(json[field], field))) {
    if (!ENV_NAME.test(key))
      throw new ConfigError(`devcontainer.json: ${field} has an invalid name '${key}'`);
    if (value.includes("${")) {
      ignore(
        `${field}.${key}`,
        "variable references are not substituted (a localEnv one would copy the host's environment into the sandbox)",
      );
      continue;
    }
    entries.push(`${key}=${value}`);
  }
  return entries;
}
