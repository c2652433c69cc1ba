/**
 * Issue 8, finding 3: a task running as the workspace owner could leave an owner-setuid (or setgid)
 * executable in the bind-mounted workspace, and any other host user who ran it got the owner's uid.
 * The kernel must refuse every way of setting the bits from inside the sandbox (seccomp), and what
 * gets through anyway (or was there) is stripped when the sandbox stops. Checked from the host.
 */
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

const SET_ID = 0o6000;

/** Shell and coreutils ways; each leaves (or tries to leave) one file named after it. */
const SHELL_VARIANTS: [string, string][] = [
  ["chmod-u+s", "cp /bin/sh chmod-u+s && chmod u+s chmod-u+s"],
  ["chmod-g+s", "cp /bin/sh chmod-g+s && chmod g+s chmod-g+s"],
  ["chmod-6755", "cp /bin/sh chmod-6755 && chmod 6755 chmod-6755"],
  ["chmod-via-symlink", "cp /bin/sh chmod-via-symlink && ln -s chmod-via-symlink link1 && chmod 4755 link1"],
  ["install-4755", "install -m 4755 /bin/sh install-4755"],
  ["install-2755", "install -m 2755 /bin/sh install-2755"],
  ["perl-chmod", "cp /bin/sh perl-chmod && perl -e 'chmod 04755, \"perl-chmod\" or exit 1'"],
  // A setuid file made where the workspace is not (tmpfs), then copied in with its mode.
  ["cp-p-from-tmp", "cp /bin/sh /tmp/s && chmod 4755 /tmp/s; cp -p /tmp/s cp-p-from-tmp"],
  [
    "tar-p",
    "cp /bin/sh t && tar --mode=4755 -cf /tmp/t.tar t && rm t && mkdir -p x && tar -xpf /tmp/t.tar -C x && mv x/t tar-p",
  ],
];

/** Python: library calls and raw syscalls (x86_64 numbers), with modes the libc would not send. */
const PYTHON_VARIANTS = `
import ctypes, os, stat, struct, tarfile, io
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SH = open("/bin/sh", "rb").read()
def plain(name):
    with open(name, "wb") as f: f.write(SH)
    os.chmod(name, 0o755)
def attempt(name, fn):
    try:
        r = fn()
        if isinstance(r, int) and r < 0: print(name, "refused", os.strerror(ctypes.get_errno()))
        else: print(name, "done")
    except OSError as e:
        print(name, "refused", e.strerror)
def sys(nr, *args): return libc.syscall(ctypes.c_long(nr), *args)
b = lambda s: ctypes.c_char_p(s.encode())
os.umask(0)
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
for n in ["py-chmod", "py-chmod-setgid", "py-fchmod", "py-fchmodat", "py-lchmod", "raw-chmod", "raw-chmod-high-bits",
          "raw-fchmod", "raw-fchmodat", "raw-fchmodat2", "raw-x32-chmod"]:
    plain(n)
attempt("py-chmod", lambda: os.chmod("py-chmod", 0o4755))
attempt("py-chmod-setgid", lambda: os.chmod("py-chmod-setgid", 0o2755))
def fchmod():
    fd = os.open("py-fchmod", os.O_RDONLY)
    try: os.fchmod(fd, 0o4755)
    finally: os.close(fd)
attempt("py-fchmod", fchmod)
attempt("py-fchmodat", lambda: os.chmod("py-fchmodat", 0o4755, dir_fd=dfd))
attempt("py-lchmod", lambda: os.chmod("py-lchmod", 0o4755, follow_symlinks=False))
attempt("py-open-creat", lambda: os.close(os.open("py-open-creat", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("py-open-creat-excl", lambda: os.close(os.open("py-open-creat-excl", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o6777)))
attempt("py-openat-creat", lambda: os.close(os.open("py-openat-creat", os.O_CREAT | os.O_WRONLY, 0o4755, dir_fd=dfd)))
attempt("py-mknod", lambda: os.mknod("py-mknod", stat.S_IFREG | 0o4755))
attempt("py-mknodat", lambda: os.mknod("py-mknodat", stat.S_IFREG | 0o2755, dir_fd=dfd))
def tmpfile():
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)
    # linkat(AT_SYMLINK_FOLLOW) gives the unnamed file a name (os.link would call link(2)).
    if libc.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, b"py-o-tmpfile", 0x400) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    os.close(fd)
attempt("py-o-tmpfile", tmpfile)
def tar_extract():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("py-tarfile"); info.size = len(SH); info.mode = 0o4755
        t.addfile(info, io.BytesIO(SH))
    buf.seek(0)
    with tarfile.open(fileobj=buf) as t: t.extractall(".")
attempt("py-tarfile", tar_extract)
attempt("raw-chmod", lambda: sys(90, b("raw-chmod"), ctypes.c_ulong(0o4755)))
attempt("raw-chmod-high-bits", lambda: sys(90, b("raw-chmod-high-bits"), ctypes.c_ulong((1 << 32) | 0o4755)))
def raw_fchmod():
    fd = os.open("raw-fchmod", os.O_RDONLY)
    return sys(91, ctypes.c_long(fd), ctypes.c_ulong(0o4755))
attempt("raw-fchmod", raw_fchmod)
attempt("raw-fchmodat", lambda: sys(268, ctypes.c_long(-100), b("raw-fchmodat"), ctypes.c_ulong(0o4755)))
attempt("raw-fchmodat2", lambda: sys(452, ctypes.c_long(-100), b("raw-fchmodat2"), ctypes.c_ulong(0o4755), ctypes.c_long(0)))
attempt("raw-x32-chmod", lambda: sys(0x40000000 + 90, b("raw-x32-chmod"), ctypes.c_ulong(0o4755)))
attempt("raw-creat", lambda: sys(85, b("raw-creat"), ctypes.c_ulong(0o4755)))
attempt("raw-open", lambda: sys(2, b("raw-open"), ctypes.c_long(os.O_CREAT | os.O_WRONLY), ctypes.c_ulong(0o4755)))
attempt("raw-open-high-bits", lambda: sys(2, b("raw-open-high-bits"), ctypes.c_long((1 << 32) | os.O_CREAT | os.O_WRONLY), ctypes.c_ulong((1 << 40) | 0o4755)))
attempt("raw-openat", lambda: sys(257, ctypes.c_long(-100), b("raw-openat"), ctypes.c_long(os.O_CREAT | os.O_WRONLY), ctypes.c_ulong(0o4755)))
how = struct.pack("QQQ", os.O_CREAT | os.O_WRONLY, 0o4755, 0)
attempt("raw-openat2", lambda: sys(437, ctypes.c_long(-100), b("raw-openat2"), ctypes.c_char_p(how), ctypes.c_size_t(len(how))))
attempt("raw-mknod", lambda: sys(133, b("raw-mknod"), ctypes.c_ulong(stat.S_IFREG | 0o4755), ctypes.c_ulong(0)))
attempt("raw-mknodat", lambda: sys(259, ctypes.c_long(-100), b("raw-mknodat"), ctypes.c_ulong(stat.S_IFREG | 0o4755), ctypes.c_ulong(0)))
`;

/** io_uring's IORING_OP_OPENAT creates files without a syscall seccomp can see: Docker 20.10 allows it. */
const IO_URING_OPENAT = `
import ctypes, mmap, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
params = ctypes.create_string_buffer(120)
fd = libc.syscall(ctypes.c_long(425), ctypes.c_uint(4), params)
if fd < 0:
    print("io_uring_setup refused", os.strerror(ctypes.get_errno())); raise SystemExit(0)
sq_entries, cq_entries = struct.unpack_from("2I", params, 0)
sq_off = struct.unpack_from("7I", params, 40)
cq_off = struct.unpack_from("6I", params, 80)
size = max(sq_off[6] + sq_entries * 4, cq_off[5] + cq_entries * 16)
ring = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
sqes = mmap.mmap(fd, sq_entries * 64, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=0x10000000)
path = ctypes.create_string_buffer(b"io-uring-openat")
sqe = struct.pack("<BBHiQQIIQ", 18, 0, 0, -100, 0, ctypes.addressof(path), 0o4755, os.O_CREAT | os.O_WRONLY, 1)
sqes[0:len(sqe)] = sqe
tail, mask = struct.unpack_from("I", ring, sq_off[1])[0], struct.unpack_from("I", ring, sq_off[2])[0]
struct.pack_into("I", ring, sq_off[6] + (tail & mask) * 4, 0)
struct.pack_into("I", ring, sq_off[1], tail + 1)
libc.syscall(ctypes.c_long(426), ctypes.c_int(fd), ctypes.c_uint(1), ctypes.c_uint(1), ctypes.c_uint(1), None, ctypes.c_size_t(0))
head, cmask = struct.unpack_from("I", ring, cq_off[0])[0], struct.unpack_from("I", ring, cq_off[2])[0]
res = struct.unpack_from("<QiI", ring, cq_off[5] + (head & cmask) * 16)[1]
print("io_uring openat", "done" if res >= 0 else "refused " + os.strerror(-res))
`;

/** Regular files in `root` (recursively) with a setuid or setgid bit, as the host sees them. */
function setIdFiles(root: string, dir = root): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const info = lstatSync(path);
    if (info.isDirectory() && name !== ".git") found.push(...setIdFiles(root, path));
    else if (info.isFile() && (info.mode & SET_ID) !== 0) found.push(path.slice(root.length + 1));
  }
  return found.sort();
}

function mode(path: string): number {
  return statSync(path).mode & 0o7777;
}

describe.skipIf(skipDocker)("adversarial: setuid and setgid files in the workspace", () => {
  it("refuses every way of setting the bits from inside (shell, coreutils, tar, perl)", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const script = SHELL_VARIANTS.map(([name, cmd]) => `(${cmd}) >/dev/null 2>&1; echo "${name} $?"`);
    const result = await sandbox.exec(script.join("\n"));
    // Checked before stop(): the kernel refused; nothing relies on the sweep here.
    expect(setIdFiles(ws.path)).toEqual([]);
    // cp -p copies /tmp/s, whose own chmod 4755 was refused: it succeeds with a plain file.
    const failed = SHELL_VARIANTS.map(([name]) => name).filter((name) => name !== "cp-p-from-tmp");
    for (const name of failed) expect(result.stdout, name).not.toMatch(new RegExp(`^${name} 0$`, "m"));
  });

  it("refuses every way of setting the bits from inside (python calls, raw syscalls, O_TMPFILE)", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec(`python3 - <<'EOF'\n${PYTHON_VARIANTS}\nEOF`);
    expect(result.stderr).toBe("");
    expect(setIdFiles(ws.path)).toEqual([]);
    // tarfile ignores a failed chmod at its default errorlevel: it "succeeds" without the bit.
    expect(result.stdout.split("\n").filter((line) => line.endsWith(" done"))).toEqual(["py-tarfile done"]);
    expect(result.stdout).toMatch(/^py-chmod refused Operation not permitted$/m);
    expect(result.stdout).toMatch(/^raw-openat2 refused Function not implemented$/m);
  });

  it("refuses io_uring, whose openat no seccomp rule can see", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec(`python3 - <<'EOF'\n${IO_URING_OPENAT}\nEOF`);
    expect(result.stdout).toMatch(/^io_uring_setup refused/);
    expect(setIdFiles(ws.path)).toEqual([]);
  });

  it("strips set-id bits left in the workspace when the sandbox stops, and says so", async () => {
    using ws = makeWorkspace();
    const outside = mkdtempSync(join(tmpdir(), "harness-outside-"));
    try {
      // A set-id file outside the workspace, reachable only through a symlink: never touched.
      copyFileSync("/bin/sh", join(outside, "host-setuid"));
      chmodSync(join(outside, "host-setuid"), 0o4755);
      const lines: string[] = [];
      const sandbox = await DockerSandbox.open({
        workspace: ws.path,
        removeOnStop: true,
        onProgress: (line) => lines.push(line),
      });
      try {
        // What got through, simulated from the host (e.g. a runtime that applies no seccomp to execs).
        expect(
          (await sandbox.exec("mkdir -p deep/er && cp /bin/sh a && cp /bin/sh deep/er/b")).exitCode,
        ).toBe(0);
        chmodSync(join(ws.path, "a"), 0o4755);
        chmodSync(join(ws.path, "deep/er/b"), 0o2711);
        symlinkSync(join(outside, "host-setuid"), join(ws.path, "link-out"));
        mkdirSync(join(ws.path, "shared"));
        chmodSync(join(ws.path, "shared"), 0o2775);
      } finally {
        await sandbox.stop();
      }
      expect(mode(join(ws.path, "a"))).toBe(0o755);
      expect(mode(join(ws.path, "deep/er/b"))).toBe(0o711);
      expect(mode(join(outside, "host-setuid"))).toBe(0o4755);
      expect(mode(join(ws.path, "shared"))).toBe(0o2775); // directories: the bit only passes the group on
      expect(lines).toContain("removed the setuid bit from a");
      expect(lines).toContain("removed the setgid bit from deep/er/b");
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("still allows ordinary modes: chmod 755/+x/+t, umask, cp -p, install, tar -p, O_TMPFILE, git", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec(
      [
        "set -e",
        "printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh && ./run.sh",
        "touch plus-x && chmod +x plus-x",
        "mkdir sticky && chmod +t sticky && chmod 1777 sticky",
        "(umask 077 && touch private)",
        "cp -p run.sh copied.sh",
        "install -m 750 run.sh installed.sh",
        "mkdir -m 700 private-dir",
        "tar -cf /tmp/a.tar run.sh && mkdir out && tar -xpf /tmp/a.tar -C out",
        "mkfifo fifo",
        `python3 -c 'import ctypes, os; fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o640); assert ctypes.CDLL(None).linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, b"tmpfile", 0x400) == 0; os.close(os.open("created", os.O_CREAT | os.O_WRONLY, 0o751)); os.chmod("created", 0o711)'`,
        "git init -q repo && cd repo && cp ../run.sh tool.sh && git add tool.sh",
        "git -c user.email=a@b -c user.name=a commit -qm one && rm tool.sh && git checkout -- tool.sh && ./tool.sh",
      ].join("\n"),
    );
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("hi\nhi\n");
    expect(result.exitCode).toBe(0);
    const at = (path: string) => mode(join(ws.path, path));
    expect(at("run.sh")).toBe(0o755);
    expect(at("plus-x") & 0o111).toBe(0o111);
    expect(at("sticky")).toBe(0o1777);
    expect(at("private")).toBe(0o600);
    expect(at("copied.sh")).toBe(0o755);
    expect(at("installed.sh")).toBe(0o750);
    expect(at("private-dir")).toBe(0o700);
    expect(at("out/run.sh")).toBe(0o755);
    expect(at("tmpfile")).toBe(0o640);
    expect(at("created")).toBe(0o711);
    expect(at("repo/tool.sh")).toBe(0o755);
  });
});
