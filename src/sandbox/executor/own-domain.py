"""A Landlock domain of its own for a process harness starts in the sandbox: what the executor gives
each command, and what `harness shell` starts in. A process in one domain can neither ptrace nor open
/proc/PID/mem of a process in another, so nothing one command or shell leaves running can take over
another's process and answer for it, although all run as the workspace owner.

Two uses, one text:
- the executor's loader runs this first as the module `own_domain` (executor-protocol.ts), and
  executor.py imports the ruleset and the entering from it;
- `python3 -I -S -c OWN_DOMAIN harness-shell [KEY=value...] -- PROGRAM ARGS...` (interactive-shell.ts)
  enters a domain, then adds the entries to the environment and execs the program. Nothing from the
  workspace runs before the domain: the devcontainer's environment (PROMPT_COMMAND, LD_PRELOAD...)
  arrives here as arguments and reaches only the program. Where the kernel has no usable Landlock it
  says so in one line on stderr and runs the program all the same (docs/security.md says why).
"""

import os
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_ACCESS_FS_EXECUTE = 1 << 0
LANDLOCK_ACCESS_FS_REFER = 1 << 13

libc = None
try:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
except Exception:
    libc = None


def prctl(option, arg):
    return -1 if libc is None else libc.prctl(option, arg, 0, 0, 0)


def landlock_ruleset():
    """A ruleset that restricts nothing in practice (it handles EXECUTE and REFER and allows both
    beneath /): what matters is the domain each process lands in. REFER must be handled and allowed:
    a domain that does not denies every link or rename across directories (EXDEV), `mv a/f b/`
    included, and ABI 1 (no REFER) always does, so there no domain is made. None where the kernel
    has no usable Landlock. Its descriptor is closed on exec."""
    if libc is None:
        return None
    try:
        if libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION) < 2:
            return None
        access = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_REFER
        attr = ctypes.create_string_buffer(struct.pack("<Q", access), 8)
        fd = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, 8, 0)
        if fd < 0:
            return None
        root = os.open("/", os.O_PATH | os.O_CLOEXEC)
        try:
            rule = ctypes.create_string_buffer(struct.pack("<Qi", access, root), 12)
            if libc.syscall(SYS_LANDLOCK_ADD_RULE, fd, LANDLOCK_RULE_PATH_BENEATH, rule, 0) != 0:
                os.close(fd)
                return None
        finally:
            os.close(root)
        os.set_inheritable(fd, False)
        return fd
    except Exception:
        return None


def enter_own_domain(ruleset):
    """Restricts this process (and all it starts) with `ruleset`, in a new domain; no_new_privs first,
    which restricting requires without CAP_SYS_ADMIN. False where there is no domain to enter."""
    if ruleset is None:
        return False
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    return libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) == 0


def start_in_own_domain(args):
    """args: KEY=value entries, `--`, then the program and its arguments. Never returns."""
    cut = args.index("--")
    if not enter_own_domain(landlock_ruleset()):
        why = "this kernel or runtime has no Landlock" if libc is not None else "python3 here has no ctypes"
        sys.stderr.write(
            "harness shell: %s, so this shell is not kept apart from harness's commands by a domain of its own (docs/security.md)\n"
            % why
        )
    env = dict(os.environ)
    for entry in args[:cut]:
        key, _, value = entry.partition("=")
        env[key] = value
    os.execve(args[cut + 1], args[cut + 1 :], env)


if __name__ == "__main__" and sys.argv[1:2] == ["harness-shell"]:
    start_in_own_domain(sys.argv[2:])
