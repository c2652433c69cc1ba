#!/usr/bin/env bash
# Makes sure a rootless Podman serves the Docker-compatible API at $HARNESS_PODMAN_ROOTLESS_SOCKET
# (default /run/harness-podman-rootless/podman.sock) for test/integration/podman-rootless.test.ts:
# a normal user ($HARNESS_PODMAN_ROOTLESS_USER, default harness-rootless) with subordinate uid and gid
# ranges runs `podman system service` in the background, and gets the base image of sandbox/Dockerfile
# from Docker (no registry needed). Run as root (it adds the user). Prints the socket path on its last
# line. On cgroup v1 this Podman cannot limit memory, pids or cpu, and harness refuses it (docs/engines.md, Podman).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
user=${HARNESS_PODMAN_ROOTLESS_USER:-harness-rootless}
socket=${HARNESS_PODMAN_ROOTLESS_SOCKET:-/run/harness-podman-rootless/podman.sock}
log=${HARNESS_PODMAN_ROOTLESS_LOG:-/tmp/harness-podman-rootless.log}

if [ "$(id -u)" != 0 ]; then
  echo "ensure-podman-rootless.sh adds a user and must run as root" >&2
  exit 1
fi
if ! command -v podman >/dev/null 2>&1 || ! command -v newuidmap >/dev/null 2>&1; then
  echo "podman rootless: installing Debian's podman and uidmap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman uidmap >/dev/null
fi
if ! id "$user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash "$user"
fi
# useradd gives new users 65536 subordinate ids when login.defs allows it; make sure either way.
grep -q "^$user:" /etc/subuid 2>/dev/null || usermod --add-subuids 200000-265535 "$user"
grep -q "^$user:" /etc/subgid 2>/dev/null || usermod --add-subgids 200000-265535 "$user"
uid=$(id -u "$user")
home=$(getent passwd "$user" | cut -d: -f6)
runtime_dir=/run/user/$uid
install -d -m 700 -o "$user" -g "$user" "$runtime_dir" "$(dirname "$socket")"
as_user() {
  runuser -u "$user" -- env HOME="$home" XDG_RUNTIME_DIR="$runtime_dir" PATH="$PATH" "$@"
}

ping() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 --unix-socket "$socket" http://podman/_ping >/dev/null 2>&1
  else
    timeout 10 podman --remote --url "unix://$socket" version >/dev/null 2>&1
  fi
}
if ping; then
  echo "podman rootless service: running"
else
  rm -f "$socket"
  echo "podman rootless service: starting as $user"
  # Every descriptor of the background part goes to the log: a subshell left holding this script's
  # stdout would keep whoever reads it (CI) waiting for the service to end.
  (cd "$home" && exec runuser -u "$user" -- env HOME="$home" XDG_RUNTIME_DIR="$runtime_dir" PATH="$PATH" \
    nohup podman system service --time=0 "unix://$socket") </dev/null >"$log" 2>&1 &
  for _ in $(seq 1 60); do
    ping && break
    sleep 0.5
  done
  if ! ping; then
    echo "podman rootless service did not come up; its log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
fi

base=$(sed -n 's/^ARG BASE_IMAGE=//p' "$here/sandbox/Dockerfile" | head -n 1)
if as_user podman image exists "$base"; then
  echo "podman rootless base image $base: present"
elif docker image inspect "$base" >/dev/null 2>&1; then
  docker save "$base" | as_user podman load -q >/dev/null
  echo "podman rootless base image $base: copied from Docker"
else
  echo "podman rootless base image $base: missing in Podman and in Docker (run scripts/build-base-image.sh first)" >&2
  exit 1
fi
echo "$socket"
