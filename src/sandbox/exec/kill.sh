# shellcheck shell=sh
# Kills one command and everything it started, from a fresh exec as the sandbox user: $1 nonce (the
# command's tag), $2 grace seconds, $3 the wrapper's pid and $4 its start time, as the wrapper
# reported them to the host before the command ran (empty when it never did), $5 the name of the
# tag variable (exec-scripts.ts EXEC_TAG_VAR). TERM first, then KILL whatever is left (a process that
# ignores TERM passes the ignore on to its children). Targets: the wrapper's process group; every
# process carrying the command's tag in its environment (children that called setsid and left the
# group); and every process that started after the wrapper did (/proc/PID/stat field 22), outside
# the killer's own session: that catches a child that both left the session and cleared its
# environment. Nothing it reads can be written by the command: /proc and its arguments. The group is
# signalled as `kill -SIG -PG`: dash's kill takes no `--`. Prints "left:" and the survivors.
id=$1; grace=$2; pg=$3; t0=$4; tag_var=$5; me=$$
case $pg in ''|*[!0-9]*|0|1) pg="" ;; esac
case $t0 in ''|*[!0-9]*) t0="" ;; esac
targets() {
  T=""
  if echo | grep -qz . 2>/dev/null; then
    # shellcheck disable=SC2013 # one /proc/N/environ path a word
    for f in $(grep -lsxzF "$tag_var=$id" /proc/[0-9]*/environ 2>/dev/null); do
      p=${f#/proc/}; p=${p%/environ}; [ "$p" = "$me" ] || T="$T $p"; done
  else
    for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$me" ] && continue
      tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -qxF "$tag_var=$id" && T="$T $p"; done
  fi
  late
}
late() {
  [ -n "$t0" ] || return 0
  for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] && continue
    { read -r st < "$d/stat"; } 2>/dev/null || continue
    # shellcheck disable=SC2086 # the fields of /proc/PID/stat after the command name
    set -- ${st##*) }; sid=$4; shift 19
    [ "$sid" = "$me" ] && continue
    [ "$1" -ge "$t0" ] 2>/dev/null && case " $T " in *" $p "*) ;; *) T="$T $p" ;; esac
  done
}
[ -n "$pg" ] && kill -TERM "-$pg" 2>/dev/null
targets
# $T is a list of pids, split on purpose.
# shellcheck disable=SC2086
[ -n "$T" ] && kill -TERM $T 2>/dev/null
i=0; while [ "$i" -lt "$((grace * 10))" ]; do targets; [ -z "$T" ] && break; sleep 0.1; i=$((i + 1)); done
for _ in 1 2 3 4 5; do
  [ -n "$pg" ] && kill -KILL "-$pg" 2>/dev/null
  targets; [ -z "$T" ] && break
  # shellcheck disable=SC2086
  kill -KILL $T 2>/dev/null; sleep 0.05
done
targets; echo "left:$T"
