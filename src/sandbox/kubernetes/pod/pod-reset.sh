# shellcheck shell=sh
# A kept pod made ready for the next session (kept-pod.ts), run as the sandbox user through
# run-as.py at the end of every session and again before the next one's copy goes in: ends every
# process of the sandbox user (the machinery, PID 1 and the executor, is root's and cannot be
# signalled), checks none is left, then empties the workspace, /tmp, the home and the state
# directory, so that nothing an earlier session made, ran or left unapplied reaches the next one.
# Repeated because a process forking in a loop can have a child the first sweep missed (as Docker's
# end of run, docker/isolation/end-of-run.ts). Any failure exits non-zero: the pod is then deleted
# instead of kept. $@: the directories to empty.
for _ in 1 2 3 4 5; do kill -KILL -1 2>/dev/null; done
# kill(-1) reaches every process this user may signal except PID 1 and the caller: a success is a survivor.
if kill -0 -1 2>/dev/null; then
  echo "processes of the sandbox user survived the kill" >&2
  exit 3
fi
for d in "$@"; do
  # A directory the session made unwritable or unreadable is the user's own: opened up to be removed.
  find "$d" -mindepth 1 -type d -exec chmod u+rwx {} + || exit 4
  find "$d" -mindepth 1 -delete || exit 4
  if [ -n "$(ls -A "$d")" ]; then
    echo "$d is not empty after the reset" >&2
    exit 5
  fi
done
