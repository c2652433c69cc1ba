"""Copy mode's checkpoints, inside the sandbox (copy-listing.ts beside this file starts it as the
sandbox user with `python3 -I -S -c`). Two modes:

list WORKDIR MAX_ENTRIES [PRUNE...]
    Every path beneath WORKDIR with its lstat, nothing followed: each directory is opened through
    its parent's descriptor with O_NOFOLLOW, each name lstat'ed relative to it. A PRUNE (a relative
    path: a directory the host knows git ignores) is listed but not walked. Output, NUL-separated:
    "H", the clock in ns; then per path 8 fields: kind (d directory, f file, l symlink, o other,
    u a directory that could not be opened), path, mode, size, mtime_ns, ctime_ns, inode, and the
    link's target (l), the kind's name (o) or why (u); last "E" and "ok", or "more" when more than
    MAX_ENTRIES paths were met (the listing stops there). Without the "E" the host trusts nothing.

fetch WORKDIR PATH...
    A tar (POSIX pax) of the regular files named (relative paths), each opened component by
    component with O_NOFOLLOW (the last also O_NONBLOCK, so a fifo never blocks) and checked with
    fstat: a path that is no longer a regular file beneath WORKDIR is left out, and the host notices
    it is missing. A file whose size or times changed while it was read is left out too.
"""
import os
import stat
import sys
import time

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Files up to this size are read whole before their header is written, so one that changes while
# it is read is left out; a larger one is streamed (and padded if it shrank: the host reads it again
# at the next step, its ctime having moved).
IN_MEMORY = 64 * 1024 * 1024
CHUNK = 1024 * 1024


class More(Exception):
    pass


def kind_name(mode):
    if stat.S_ISFIFO(mode):
        return b"fifo"
    if stat.S_ISSOCK(mode):
        return b"socket"
    if stat.S_ISCHR(mode):
        return b"character device"
    if stat.S_ISBLK(mode):
        return b"block device"
    return b"unknown"


def listing(out, root, limit, prune):
    out.write(b"H\0%d\0" % time.time_ns())
    left = [limit]
    fsencode = os.fsencode
    S_ISDIR, S_ISREG, S_ISLNK = stat.S_ISDIR, stat.S_ISREG, stat.S_ISLNK

    def walk(fd, rel):
        prefix = rel + b"/" if rel else b""
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
        left[0] -= len(entries)
        records = []
        subdirs = []
        for e in entries:
            path = prefix + fsencode(e.name)
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since the directory was read
            mode = st.st_mode
            if S_ISREG(mode):
                kind, extra = b"f", b""
            elif S_ISDIR(mode):
                kind, extra = b"d", b""
                if path not in prune:
                    subdirs.append((e.name, path))
            elif S_ISLNK(mode):
                kind = b"l"
                try:
                    extra = fsencode(os.readlink(e.name, dir_fd=fd))
                except OSError:
                    continue  # swapped since the lstat: the next listing sees what it became
            else:
                kind, extra = b"o", kind_name(mode)
            records.append(b"%s\0%s\0%d\0%d\0%d\0%d\0%d\0%s\0" % (
                kind, path, mode & 0o7777, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, extra))
        out.write(b"".join(records))
        if left[0] < 0:
            raise More()
        for name, path in subdirs:
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                why = fsencode(error.strerror or "unreadable")
                out.write(b"\0".join([b"u", path, b"0", b"0", b"0", b"0", b"0", why]) + b"\0")
                continue
            try:
                walk(child, path)
            finally:
                os.close(child)

    root_fd = os.open(root, DIR_FLAGS)
    try:
        walk(root_fd, b"")
        out.write(b"E\0ok\0")
    except More:
        out.write(b"E\0more\0")
    finally:
        os.close(root_fd)


def open_beneath(root_fd, rel):
    """A descriptor of the regular file `rel` beneath root_fd, never through a link; else None."""
    parts = rel.split(b"/")
    if any(p in (b"", b".", b"..") for p in parts):
        return None
    fd = os.dup(root_fd)
    try:
        for part in parts[:-1]:
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return os.open(parts[-1], FILE_FLAGS, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)


class Padded:
    """A large file's bytes, padded with zeros if it shrank while it was read (tarfile reads `size`)."""

    def __init__(self, fd):
        self.fd = fd

    def read(self, n):
        return os.read(self.fd, n) or bytes(n)


def read_whole(fd, size):
    chunks = []
    total = 0
    while total <= size:
        chunk = os.read(fd, min(CHUNK, size + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def same(a, b):
    return (a.st_size, a.st_mtime_ns, a.st_ctime_ns, a.st_ino) == (
        b.st_size, b.st_mtime_ns, b.st_ctime_ns, b.st_ino)


def fetch(out, root, paths):
    import io
    import tarfile

    root_fd = os.open(root, DIR_FLAGS)
    archive = tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT,
                           encoding="utf-8", errors="surrogateescape")
    try:
        for rel in paths:
            fd = open_beneath(root_fd, rel)
            if fd is None:
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    continue
                info = tarfile.TarInfo(os.fsdecode(rel))
                info.size = st.st_size
                info.mode = stat.S_IMODE(st.st_mode)
                info.mtime = st.st_mtime_ns // 1_000_000_000
                if st.st_size <= IN_MEMORY:
                    data = read_whole(fd, st.st_size)
                    if len(data) != st.st_size or not same(st, os.fstat(fd)):
                        continue
                    archive.addfile(info, io.BytesIO(data))
                else:
                    archive.addfile(info, Padded(fd))
            except OSError:
                continue
            finally:
                os.close(fd)
    finally:
        archive.close()
        os.close(root_fd)


def main():
    out = sys.stdout.buffer
    mode, root = sys.argv[1], os.fsencode(sys.argv[2])
    if mode == "list":
        limit = int(sys.argv[3])
        prune = set(os.fsencode(p) for p in sys.argv[4:])
        listing(out, root, limit, prune)
    elif mode == "fetch":
        fetch(out, root, [os.fsencode(p) for p in sys.argv[3:]])
    else:
        sys.exit("workspace-listing: unknown mode %r" % mode)
    out.flush()


main()
