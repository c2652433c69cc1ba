"""Runs one program as the sandbox user, for harness's helper execs in a pod (the copy in and out,
the kill from outside, a published port's forwarder): the Kubernetes exec API has no user field, so every exec starts as the
container's user (the machinery: root holding only CAP_SETUID and CAP_SETGID, pod-spec.ts).

python3 -I -S -c RUN_AS UID GID PROGRAM ARGS...: drops the supplementary groups, then the gids, then
the uids (real, effective and saved: the capabilities go with uid 0), and execs the program. The
container's no_new_privs (allowPrivilegeEscalation: false) stays. Refuses uid or gid 0.
"""

import os
import sys

uid, gid = int(sys.argv[1]), int(sys.argv[2])
if uid == 0 or gid == 0:
    sys.exit("run-as: harness never runs as uid or gid 0")
os.setgroups([])
os.setresgid(gid, gid, gid)
os.setresuid(uid, uid, uid)
if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid:
    sys.exit("run-as: the uid or gid did not change")
os.execvp(sys.argv[3], sys.argv[3:])
