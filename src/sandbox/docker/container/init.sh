# shellcheck shell=sh
# PID 1 of the sandbox container (harness's machinery: root with SETUID and SETGID only). It ignores
# the signals a command could send (no command can signal it anyway: another uid), reaps every orphan
# (`wait`), and outlives `kill -9 -1` (with tini as PID 1 the same kill stopped the whole container).
# $1: how long its one child sleeps; `sleep $1` is the child the end of a run counts (INIT_CHILD).
trap '' TERM INT HUP QUIT
while :; do
  sleep "$1" &
  wait
done
