# shellcheck shell=sh
# Runs one command on the per-call path (an image without python3): the exec's first process, as
# the sandbox user. $1 nonce, $2 workspace dir (fallback), $3 command, $4 start dir, $5 and $6 the
# leads of its start line and end markers (wrapper-script.ts START_LEAD, MARKER_LEAD).
# - first, before the command exists, one start line goes to stdout: nonce, the wrapper's pid and its
#   start time (/proc/$$/stat field 22). The host takes the first line of stdout for it, and hands
#   both to the killer; nothing the command can write is read back.
# - cwd persists through the host: the command's shell opens the pipe of the command substitution
#   only in its EXIT trap (through its parent's /proc/PID/fd/1) and writes `pwd` there, so nothing
#   the command starts holds that pipe. The host passes it back as $4 next time; a directory that is
#   gone or unusable falls back to the workspace, then /.
# - the command runs in bash when there is one (the tool is called bash), else sh.
# - afterwards one marker line goes to stdout and one to stderr, carrying exit code, OOM kills seen
#   by the memory cgroup during the command, the background count and the new cwd. After the command
#   it only uses builtins, so a full pid table cannot stop it reporting. Its own pid is the session
#   and process group of the whole command (runc makes each exec a session leader).
# - the background count: how many processes PID 1 adopted besides its own `sleep` (jobs a command
#   left running). One `read` of /proc/1/task/1/children costs ~50 us; a kernel without it gets a
#   scan of /proc/N/stat. Only a nonzero count makes the host ask `docker top`.
# It reads no file the sandbox user can write: a planted fifo or link can only hang its own call.
# The marker and the wrapper are the command's uid and in its reach: a command can forge the end
# (docs/executor.md, the per-call path).
id=$1; ws=$2; cmd=$3; start=$4; start_lead=$5; end_lead=$6
oom() { OOM=0; for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
  [ -r "$f" ] || continue; while read -r k n; do [ "$k" = oom_kill ] && OOM=$n; done < "$f"; return; done; }
read -r st < /proc/$$/stat
# Split on purpose: the fields of /proc/PID/stat after the command name, or a list of pids.
# shellcheck disable=SC2086
set -- ${st##*) }; shift 19
printf '%s%s:%s:%s\n' "$start_lead" "$id" "$$" "$1"
oom; before=$OOM
cd "$start" 2>/dev/null || cd "$ws" 2>/dev/null || cd /
if command -v bash >/dev/null 2>&1; then sh="bash"; else sh="sh"; fi
nl='
'
exec 4>&1
# The inner shell expands $PPID and $1 itself.
# shellcheck disable=SC2016
out=$( ( exec "$sh" -c 'trap "{ pwd > /proc/$PPID/fd/1; } 2>/dev/null" EXIT; eval "$1"' bash "$cmd" 1>&4 4>&- ); echo "$?")
sub=$?
exec 4>&-
rc=${out##*"$nl"}; end=${out%"$rc"}; end=${end%"$nl"}
# No status: the subshell died, killed (128+n) or unable to fork (2, and it said "Cannot fork").
case $rc in ''|*[!0-9]*) exit "$sub" ;; esac
case $end in /*) ;; *) end= ;; esac
case $end in *"$nl"*) end= ;; esac
[ ${#end} -le 4096 ] || end=
oom
bg=0
if [ -r /proc/1/task/1/children ]; then
  # One line of pids without a newline: read "fails" at end of file but has read it.
  read -r kids < /proc/1/task/1/children
  # shellcheck disable=SC2086
  set -- $kids; [ $# -gt 1 ] && bg=$(($# - 1))
else
  for d in /proc/[0-9]*; do
    { read -r st < "$d/stat"; } 2>/dev/null || continue
    # shellcheck disable=SC2086
    set -- ${st##*) }
    [ "$2" = 1 ] && [ "$4" != 1 ] && [ "$1" != Z ] && bg=$((bg + 1))
  done
fi
printf '%s%s:\n' "$end_lead" "$id" >&2
printf '%s%s:%s:%s:%s:%s\n' "$end_lead" "$id" "$rc" "$((OOM - before))" "$bg" "$end"
