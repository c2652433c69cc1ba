# shellcheck shell=sh
# Whether the container can still run commands: the pid limit leaves room (and, with "fork", a process
# can be started). Shell builtins until the fork, so it works in a crowded container.
# $1: the exit code when the pid limit is (nearly) used up; $2: "fork" to also start a process.
# Docker's own health check (container-spec.ts HEALTHCHECK) runs it without "fork", exit code 1
# ("unhealthy"); harness's check before a command (docker-sandbox.ts) with "fork", exit code 3.
full=$1
for d in /sys/fs/cgroup/pids /sys/fs/cgroup; do
  if [ -r "$d/pids.current" ] && [ -r "$d/pids.max" ]; then
    read -r c < "$d/pids.current"
    read -r m < "$d/pids.max"
    [ "$m" = max ] || [ "$((m - c))" -gt 8 ] || exit "$full"
    break
  fi
done
if [ "${2:-}" = fork ]; then
  true &
  wait $!
else
  exit 0
fi
