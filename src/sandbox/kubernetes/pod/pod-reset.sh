# shellcheck shell=sh
# A kept pod made ready for the next session (kept-pod.ts), run as the sandbox user through
# run-as.py at the end of every session and again before the next one's copy goes in: ends every
# process of the sandbox user (the machinery, PID 1 and the executor, is root's and cannot be
# signalled), checks none is left, then empties the workspace, /tmp, the home and the state
# directory, so that nothing an earlier session made, ran or left unapplied reaches the next one.
# Any failure exits non-zero: the pod is then deleted instead of kept. $@: the directories to empty.
me=$(id -u)

# Sets $found to the pids of this user's processes other than this shell, zombies left out (dead,
# holding nothing; PID 1 reaps them). Builtins only, no $(…): the scan itself adds no process.
survivors() {
  found=""
  for status in /proc/[0-9]*/status; do
    pid=${status#/proc/}; pid=${pid%/status}
    [ "$pid" = "$$" ] && continue
    state=""; uid=""
    while read -r key first _; do
      case $key in State:) state=$first ;; Uid:) uid=$first ;; esac
    done 2>/dev/null <"$status"
    if [ "$uid" = "$me" ] && [ "$state" != Z ]; then found="$found $pid"; fi
  done
}

# Swept again while any is left: a process forking in a loop can have a child the last sweep missed,
# and a killed process takes a moment to die (as Docker's end of run, docker/isolation/end-of-run.ts).
found=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  kill -KILL -1 2>/dev/null
  survivors
  [ -z "$found" ] && break
  sleep 0.2
done
if [ -n "$found" ]; then
  echo "processes of the sandbox user survived the kill:$found" >&2
  exit 3
fi
for d in "$@"; do
  # A directory the session made unwritable or unreadable is the user's own: opened up to be
  # removed. Links are left out (chmod would follow one named on its command line; -R follows none).
  find "$d" -mindepth 1 -maxdepth 1 ! -type l -exec chmod -R u+rwX {} + || exit 4
  find "$d" -mindepth 1 -delete || exit 4
  if [ -n "$(ls -A "$d")" ]; then
    echo "$d is not empty after the reset" >&2
    exit 5
  fi
done
