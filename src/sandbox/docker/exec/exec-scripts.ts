/**
 * The small POSIX sh programs harness runs inside the container. They use shell builtins where they
 * can (each fork costs ~3 ms) and need nothing but /bin/sh, so `--image` works with any image.
 */

/**
 * A tiny tmpfs every container mounts (container-spec.ts). harness keeps no state in it: all of it
 * is writable by the command (same uid), so a fifo, link or garbage planted there would hang or
 * steer whatever read it. The start directory and the wrapper's pid and start time are kept on the
 * host and passed as arguments.
 */
export const STATE_DIR = "/run/harness";

/** The env var that tags every process of one command; the killer finds them by it. */
export const EXEC_TAG_VAR = "HARNESS_EXEC";

/** Starts the marker line; `\x1e\x1f` never occurs in ordinary text output. */
export const MARKER_LEAD = "\u001e\u001fHARNESS-END:";

/** Starts the line the wrapper prints first, before the command runs: nonce, its pid, its start time. */
export const START_LEAD = "\u001e\u001fHARNESS-START:";

/** The one child PID 1 keeps, as `ps` shows it: with it alone beside PID 1, nothing else runs. */
export const INIT_CHILD = "sleep 2147483647";

/**
 * PID 1 of the container. It ignores the signals a sandbox user can send it, reaps every orphan
 * (`wait`), and outlives `kill -9 -1` from the sandbox user (measured; with tini as PID 1 the same
 * kill stops the whole container).
 */
export const INIT_SCRIPT = `trap '' TERM INT HUP QUIT; while :; do ${INIT_CHILD} & wait; done`;

/**
 * Runs one command: $1 nonce, $2 workspace dir (fallback), $3 command, $4 start dir.
 * - first, before the command exists, one start line goes to stdout: nonce, the wrapper's pid and its
 *   start time (/proc/$$/stat field 22). The host takes the first line of stdout for it, and hands
 *   both to the killer; nothing the command can write is read back.
 * - cwd persists through the host: the command's shell opens the pipe of the command substitution
 *   only in its EXIT trap (through its parent's /proc/PID/fd/1) and writes `pwd` there, so nothing
 *   the command starts holds that pipe (a background subshell would keep the call open). The host
 *   passes it back as $4 next time; a directory that is gone or unusable falls back to the
 *   workspace, then /.
 * - the command runs in bash when there is one (the tool is called bash), else sh.
 * - afterwards one marker line goes to stdout and one to stderr, carrying exit code, OOM kills seen
 *   by the container's memory cgroup during the command, the background count (below), and the new
 *   cwd. After the command it only uses builtins, so a full pid table cannot stop it reporting (a
 *   fork that failed before the command ran exits 2 without markers, as `neverStarted` expects). Its
 *   own pid is the session and process group of the whole command (runc makes each exec a session
 *   leader), so the killer can signal the group.
 * - the background count: how many processes PID 1 has adopted besides its own `sleep`, i.e. jobs
 *   this command or an earlier one left running when the process that started them ended (`nohup
 *   server &`, `setsid` or not). An exec's first process has its parent outside the container, so
 *   this wrapper, harness's helpers, the allowlist relay and Docker's health check are never
 *   adopted. One `read` of /proc/1/task/1/children costs ~50 µs; a kernel without that file
 *   (no CONFIG_PROC_CHILDREN, gVisor) gets a scan of /proc/N/stat (~0.5 ms per process: `read` takes
 *   a byte per syscall). Only a nonzero count makes the host ask `docker top` (background-processes.ts).
 * It reads no file the sandbox user can write: a planted fifo or link can only hang the call that
 * planted it (until its timeout), never a later one.
 */
export const WRAPPER_SCRIPT = `
id=$1; ws=$2; cmd=$3; start=$4
oom() { OOM=0; for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
  [ -r "$f" ] || continue; while read -r k n; do [ "$k" = oom_kill ] && OOM=$n; done < "$f"; return; done; }
read -r st < /proc/$$/stat; set -- \${st##*) }; shift 19
printf '${START_LEAD}%s:%s:%s\\n' "$id" "$$" "$1"
oom; before=$OOM
cd "$start" 2>/dev/null || cd "$ws" 2>/dev/null || cd /
if command -v bash >/dev/null 2>&1; then sh=bash; else sh=sh; fi
nl='
'
exec 4>&1
out=$( ( exec "$sh" -c 'trap "{ pwd > /proc/$PPID/fd/1; } 2>/dev/null" EXIT; eval "$1"' bash "$cmd" 1>&4 4>&- ); echo "$?")
sub=$?
exec 4>&-
rc=\${out##*"$nl"}; end=\${out%"$rc"}; end=\${end%"$nl"}
# No status: the subshell died, killed (128+n) or unable to fork (2, and it said "Cannot fork").
case $rc in ''|*[!0-9]*) exit "$sub" ;; esac
case $end in /*) ;; *) end= ;; esac
case $end in *"$nl"*) end= ;; esac
[ \${#end} -le 4096 ] || end=
oom
bg=0
if [ -r /proc/1/task/1/children ]; then
  # One line of pids without a newline: read "fails" at end of file but has read it.
  read -r kids < /proc/1/task/1/children; set -- $kids; [ $# -gt 1 ] && bg=$(($# - 1))
else
  for d in /proc/[0-9]*; do
    { read -r st < "$d/stat"; } 2>/dev/null || continue
    set -- \${st##*) }
    [ "$2" = 1 ] && [ "$4" != 1 ] && [ "$1" != Z ] && bg=$((bg + 1))
  done
fi
printf '${MARKER_LEAD}%s:%s\\n' "$id" >&2
printf '${MARKER_LEAD}%s:%s:%s:%s:%s\\n' "$id" "$rc" "$((OOM - before))" "$bg" "$end"
`;

/**
 * Kills one command and everything it started: $1 nonce, $2 grace seconds, $3 the wrapper's pid and
 * $4 its start time, as the wrapper reported them to the host before the command ran (empty when it
 * never did). TERM first, then KILL whatever is left (a process that ignores TERM passes the ignore on
 * to its children). Targets are the wrapper's process group; every process carrying the command's
 * tag in its environment (children that called setsid and left the group); and every process that
 * started after the wrapper did (/proc/PID/stat field 22), outside the killer's own session: that
 * catches a child that both left the session and cleared its environment. harness runs one command
 * at a time per sandbox, so a process younger than the command is the command's. Nothing it reads
 * can be written by the command: /proc and its arguments. The group is signalled as `kill -SIG -PG`:
 * dash's kill takes no `--` ("Illegal number: -"), which silently skipped the group kill before.
 */
export const KILL_SCRIPT = `
id=$1; grace=$2; pg=$3; t0=$4; me=$$
case $pg in ''|*[!0-9]*|0|1) pg="" ;; esac
case $t0 in ''|*[!0-9]*) t0="" ;; esac
targets() {
  T=""
  if echo | grep -qz . 2>/dev/null; then
    for f in $(grep -lsxzF "${EXEC_TAG_VAR}=$id" /proc/[0-9]*/environ 2>/dev/null); do
      p=\${f#/proc/}; p=\${p%/environ}; [ "$p" = "$me" ] || T="$T $p"; done
  else
    for d in /proc/[0-9]*; do p=\${d#/proc/}; [ "$p" = "$me" ] && continue
      tr '\\0' '\\n' < "$d/environ" 2>/dev/null | grep -qxF "${EXEC_TAG_VAR}=$id" && T="$T $p"; done
  fi
  late
}
late() {
  [ -n "$t0" ] || return 0
  for d in /proc/[0-9]*; do p=\${d#/proc/}; [ "$p" = 1 ] && continue
    { read -r st < "$d/stat"; } 2>/dev/null || continue
    set -- \${st##*) }; sid=$4; shift 19
    [ "$sid" = "$me" ] && continue
    [ "$1" -ge "$t0" ] 2>/dev/null && case " $T " in *" $p "*) ;; *) T="$T $p" ;; esac
  done
}
[ -n "$pg" ] && kill -TERM "-$pg" 2>/dev/null
targets; [ -n "$T" ] && kill -TERM $T 2>/dev/null
i=0; while [ "$i" -lt "$((grace * 10))" ]; do targets; [ -z "$T" ] && break; sleep 0.1; i=$((i + 1)); done
for round in 1 2 3 4 5; do
  [ -n "$pg" ] && kill -KILL "-$pg" 2>/dev/null
  targets; [ -z "$T" ] && break
  kill -KILL $T 2>/dev/null; sleep 0.05
done
targets; echo "left:$T"
`;

/**
 * Exits `code` when the pid limit is (nearly) exhausted: a command could not start a process. Shell
 * builtins only (`read`, `[`, arithmetic), so checking costs no pid and works in a crowded container.
 */
function pidsHeadroom(code: number): string {
  return `
for d in /sys/fs/cgroup/pids /sys/fs/cgroup; do
  if [ -r "$d/pids.current" ] && [ -r "$d/pids.max" ]; then
    read -r c < "$d/pids.current"; read -r m < "$d/pids.max"
    [ "$m" = max ] || [ "$((m - c))" -gt 8 ] || exit ${code}
    break
  fi
done`;
}

/**
 * Exits 0 when the container can still run commands: a process can be forked and the pid limit is
 * not (nearly) exhausted. Only builtins until the fork, so it works in a crowded container.
 */
export const HEALTH_SCRIPT = `${pidsHeadroom(3)}
true & wait $!
`;

/**
 * Docker's own health check of the container (container-spec.ts): that the engine can still start a
 * process in it (the probe is one) and that the pid limit leaves commands room to run. Builtins
 * only, so the probe is a single short-lived `sh`: it forks nothing, and `exit 1` is Docker's
 * "unhealthy".
 */
export const CONTAINER_HEALTH_SCRIPT = `${pidsHeadroom(1)}
exit 0
`;
