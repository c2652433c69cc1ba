/**
 * The one parser for the user sandbox commands run as (`--user`, `DockerSandbox.open({ user })`, the
 * workspace owner). It reads UID[:GID] as decimal numbers and returns the canonical "uid:gid" that
 * Docker gets, so what was checked is exactly what runs. A pattern on the text is not enough:
 * `--user 00` would pass one and run as root, since Docker reads "00" as the number 0.
 */
import { SandboxError } from "../errors.js";

/**
 * The user as Docker gets it ("uid:gid"), or why not: `reason` reads after a name, as in
 * "--user must be…".
 */
export type ParsedUser = { ok: true; user: string; uid: number; gid: number } | { ok: false; reason: string };

/**
 * runc refuses ids above 2^31-1 (user.maxId), and anything from 2^32 up would be truncated to a
 * 32-bit uid_t, where 4294967296 is 0 and 4294967295 is (uid_t)-1: none of them is a user to run as.
 */
export const MAX_ID = 2 ** 31 - 1;

/**
 * Only ASCII digits: no names (Docker resolves `root`, or any name, through the image's /etc/passwd,
 * and with `--image` any name may map to 0), no signs, spaces, other bases, exponents or empty parts.
 * Leading zeros are fine: the parts are read as numbers and written back without them.
 */
const USER_PATTERN = /^([0-9]+)(?::([0-9]+))?$/;

/** "uid[:gid]" → canonical "uid:gid" (gid defaults to uid), refusing root in every spelling. */
export function parseSandboxUser(text: string): ParsedUser {
  const match = USER_PATTERN.exec(text);
  if (!match) {
    return {
      ok: false,
      reason: `must be UID or UID:GID in decimal digits (e.g. 1000:1000), not a name; got '${text}'`,
    };
  }
  const uid = Number(match[1]);
  const gid = match[2] === undefined ? uid : Number(match[2]);
  if (uid > MAX_ID || gid > MAX_ID) {
    return { ok: false, reason: `must be at most ${MAX_ID} (uid and gid); got '${text}'` };
  }
  if (uid === 0) {
    return {
      ok: false,
      reason: `must not be uid 0: uid 0 is root, and harness never runs commands as root; got '${text}'`,
    };
  }
  // The root group is refused too: gid 0 opens whatever the image or a mounted path leaves
  // group-accessible to root, and files the sandbox creates in the workspace would belong to it.
  // Every normal user has a group of their own to run in instead.
  if (gid === 0) {
    return {
      ok: false,
      reason: `must not be gid 0: gid 0 is the root group, and harness never runs commands in it; pass a non-zero GID, e.g. --user ${uid}:${uid}; got '${text}'`,
    };
  }
  return { ok: true, user: `${uid}:${gid}`, uid, gid };
}

/**
 * The user `DockerSandbox.open` runs as: `given` (from the CLI or a library caller, checked again
 * here: the sandbox does not trust its caller) or else the workspace owner's "uid:gid".
 */
export function resolveSandboxUser(workspace: string, owner: string, given: string | undefined): string {
  const parsed = parseSandboxUser(given ?? owner);
  if (parsed.ok) return parsed.user;
  if (given !== undefined) throw new SandboxError(`user ${parsed.reason}`);
  const { uid, gid } = parseUserIds(owner);
  const fix =
    uid === 0
      ? "is owned by root, and harness never runs commands as root: pass --user UID:GID (e.g. 1000:1000) or chown the workspace to a normal user"
      : gid === 0
        ? `belongs to the root group (owner ${owner}), and harness never runs commands in it: pass --user ${uid}:${uid} (or another non-zero GID) or chgrp the workspace`
        : `is owned by ${owner}, which cannot be the sandbox's user (it ${parsed.reason}): pass --user UID:GID`;
  throw new SandboxError(`workspace '${workspace}' ${fix}`);
}

/** "uid:gid" (as `ResolvedWorkspace.owner` and the --user flag give it) as numbers; gid defaults to uid. */
export function parseUserIds(user: string): { uid: number; gid: number } {
  const [uid = Number.NaN, gid = uid] = user.split(":").map(Number);
  return { uid, gid };
}
