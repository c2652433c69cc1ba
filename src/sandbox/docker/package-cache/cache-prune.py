"""The package cache's keeper, run in a throwaway container before a sandbox opens (never on the host).

Arguments: the volume's mount point, the sandbox user's uid and gid, and the most bytes the cache may
hold (-1: measure only, change nothing). It gives the volume's root to the sandbox user (a new volume
is root's), then measures every entry, and when the cache holds more than the bound it deletes the
least recently used files until it holds at most LOW_WATER of it, so that not every open prunes.

Everything in the volume was written by tasks, so nothing here follows a symlink or trusts a name:
entries are lstat'ed and unlinked, never opened. The only output is one JSON line of numbers.
"""

import json
import os
import stat
import sys

LOW_WATER = 0.8


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


def entries(root):
    """(last use, bytes, path) of every non-directory below root, and the bytes of the directories."""
    files = []
    dir_bytes = 0
    for path, st in walk(root):
        used = st.st_blocks * 512
        if stat.S_ISDIR(st.st_mode):
            dir_bytes += used
        else:
            files.append((max(st.st_atime, st.st_mtime), used, path))
    return files, dir_bytes


def remove_empty_dirs(root):
    dirs = [path for path, st in walk(root) if stat.S_ISDIR(st.st_mode)]
    for path in sorted(dirs, key=len, reverse=True):
        try:
            os.rmdir(path)
        except OSError:
            pass


def main():
    root, uid, gid, max_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if max_bytes >= 0:
        st = os.lstat(root)
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.chown(root, uid, gid, follow_symlinks=False)
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(root, 0o700)
    files, dir_bytes = entries(root)
    before = dir_bytes + sum(used for _, used, _ in files)
    after = before
    removed = 0
    if 0 <= max_bytes < before:
        target = int(max_bytes * LOW_WATER)
        for _, used, path in sorted(files):
            if after <= target:
                break
            try:
                os.unlink(path)
            except OSError:
                continue
            after -= used
            removed += 1
        remove_empty_dirs(root)
        files, dir_bytes = entries(root)
        after = dir_bytes + sum(used for _, used, _ in files)
    print(json.dumps({"before": before, "after": after, "removed": removed, "files": len(files)}))


main()
