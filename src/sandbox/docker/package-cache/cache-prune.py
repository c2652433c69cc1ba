"""The package cache's keeper, run in a throwaway container before a sandbox opens (never on the host).

Arguments: the directory the volumes are mounted in (one directory per volume: a user's caches, one
per workspace), the sandbox user's uid and gid, and the most bytes those caches may hold together
(-1: measure only, change nothing). It gives each volume's root to the sandbox user (a new volume is
root's), then measures every entry, and when the caches hold more than the bound it deletes the least
recently used files, whichever cache they are in, until they hold at most LOW_WATER of it, so that
not every open prunes.

Everything in the volumes was written by tasks, so nothing here follows a symlink or trusts a name:
entries are lstat'ed and unlinked, never opened. The only output is one JSON line of numbers.
"""

import base64
import binascii
import json
import os
import stat
import sys

LOW_WATER = 0.8
# An npm index bucket holds the lines of one key; a bigger one is no bucket npm wrote.
MAX_BUCKET = 1 << 20


def walk(root):
    """Every entry below root, lstat'ed: no symlink is followed, not even to ask if it is a directory
    (that would read the link, and so mark it as just used)."""
    stack = [root]
    while stack:
        try:
            listing = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in listing:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
            yield entry.path, st


def entries(roots):
    """(last use, bytes, path, its volume's root) of every non-directory below the roots, and the
    bytes of the directories."""
    files = []
    dir_bytes = 0
    for root in roots:
        for path, st in walk(root):
            used = st.st_blocks * 512
            if stat.S_ISDIR(st.st_mode):
                dir_bytes += used
            else:
                files.append((max(st.st_atime, st.st_mtime), used, path, root))
    return files, dir_bytes


def remove_empty_dirs(root):
    dirs = [path for path, st in walk(root) if stat.S_ISDIR(st.st_mode)]
    for path in sorted(dirs, key=len, reverse=True):
        try:
            os.rmdir(path)
        except OSError:
            pass


def content_path(cacache, integrity):
    """Where cacache keeps the content an index entry names ("sha512-BASE64 ...": its first hash)."""
    for item in integrity.split():
        algo, _, digest = item.partition("-")
        if not algo.isalnum():
            continue
        try:
            hexdigest = base64.b64decode(digest.split("?")[0], validate=True).hex()
        except (binascii.Error, ValueError):
            continue
        if len(hexdigest) >= 8:
            return os.path.join(cacache, "content-v2", algo, hexdigest[:2], hexdigest[2:4], hexdigest[4:])
    return None


def names_missing_content(cacache, path):
    """Whether the bucket at path has an entry whose content is gone. O_NONBLOCK: a FIFO a task
    swapped in after the lstat must not hang the keeper; O_NOFOLLOW: nor a symlink lead it away."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as bucket:
            text = bucket.read(MAX_BUCKET + 1)
    except OSError:
        return False
    if len(text) > MAX_BUCKET:
        return True
    for line in text.decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(line.partition("\t")[2])
        except ValueError:
            continue
        integrity = entry.get("integrity") if isinstance(entry, dict) else None
        if not isinstance(integrity, str):
            continue
        target = content_path(cacache, integrity)
        if target is not None and not os.path.lexists(target):
            return True
    return False


def unit_of(root, path):
    """The directory a tool unpacked whole and later uses without checking it, when path is in one:
    a module of Go's module cache (go/mod/PATH@VERSION/), a crate cargo unpacked
    (cargo/registry/src/INDEX/CRATE-VERSION/) or a git checkout of cargo's
    (cargo/git/checkouts/REPO/REV/). A file missing from one breaks a later build instead of being
    fetched again, so such a directory goes whole or not at all."""
    parts = os.path.relpath(path, root).split(os.sep)
    if parts[:2] == ["go", "mod"] and len(parts) > 3 and parts[2] != "cache":
        for depth in range(2, len(parts) - 1):
            if "@" in parts[depth]:
                return os.path.join(root, *parts[: depth + 1])
    if parts[:3] in (["cargo", "registry", "src"], ["cargo", "git", "checkouts"]) and len(parts) > 5:
        return os.path.join(root, *parts[:5])
    return None


def by_last_use(files):
    """files (last use, bytes, path, its volume's root) in the order they go, the least recently used
    first, whichever volume they are in; a unit's files all at once, as recently used as the latest
    of them."""
    latest = {}
    for used, _, path, root in files:
        unit = unit_of(root, path)
        if unit is not None:
            latest[unit] = max(used, latest.get(unit, used))
    ordered = []
    for used, size, path, root in files:
        unit = unit_of(root, path)
        ordered.append((used if unit is None else latest[unit], unit or "", size, path, root))
    return sorted(ordered)


def pip_partner(root, path):
    """pip 23.3 and later keep a cached response's body beside its headers (http-v2: NAME and
    NAME.body): one goes with the other, so pip never finds headers without their body."""
    if not path.startswith(os.path.join(root, "pip", "http-v2") + os.sep):
        return None
    return path[: -len(".body")] if path.endswith(".body") else path + ".body"


def drop_dangling_npm_entries(root):
    """npm fails (rather than download again) on an index entry whose content is gone: after a
    prune, every bucket that names removed content goes too, and its key is a plain miss."""
    cacache = os.path.join(root, "npm", "_cacache")
    for path, st in walk(os.path.join(cacache, "index-v5")):
        if stat.S_ISREG(st.st_mode) and names_missing_content(cacache, path):
            try:
                os.unlink(path)
            except OSError:
                pass


def volumes(mount):
    """The volumes' roots: the directories the engine made in the mount directory, one per volume."""
    roots = []
    for entry in sorted(os.scandir(mount), key=lambda e: e.name):
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            roots.append((entry.path, st))
    return roots


def main():
    mount, uid, gid, max_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    found = volumes(mount)
    roots = [root for root, _ in found]
    if max_bytes >= 0:
        for root, st in found:
            if (st.st_uid, st.st_gid) != (uid, gid):
                os.chown(root, uid, gid, follow_symlinks=False)
            if stat.S_IMODE(st.st_mode) != 0o700:
                os.chmod(root, 0o700)
    files, dir_bytes = entries(roots)
    before = dir_bytes + sum(used for _, used, _, _ in files)
    after = before
    removed = 0
    if 0 <= max_bytes < before:
        target = int(max_bytes * LOW_WATER)
        for _, unit, used, path, root in by_last_use(files):
            if after <= target:
                break
            try:
                os.unlink(path)
            except OSError:
                continue
            after -= used
            removed += 1
            if unit:
                # The rest of the unit goes with it, whatever the bound says.
                for other, st in walk(unit):
                    if not stat.S_ISDIR(st.st_mode):
                        try:
                            os.unlink(other)
                        except OSError:
                            continue
                        after -= st.st_blocks * 512
                        removed += 1
            partner = pip_partner(root, path)
            if partner is not None:
                try:
                    os.unlink(partner)
                except OSError:
                    pass
        for root in roots:
            drop_dangling_npm_entries(root)
            remove_empty_dirs(root)
        files, dir_bytes = entries(roots)
        after = dir_bytes + sum(used for _, used, _, _ in files)
    print(json.dumps({"before": before, "after": after, "removed": removed, "files": len(files)}))


main()
