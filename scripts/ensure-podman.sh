#!/usr/bin/env bash
# Makes sure rootful Podman serves the Docker-compatible API at $HARNESS_PODMAN_SOCKET (default
# /run/harness-podman/podman.sock) for harness's Podman tests: installs Debian's podman when
# missing (~30 s with apt-get update), starts `podman system service` in the background, and gives
# it the base image of sandbox/Dockerfile from Docker (no registry needed) so harness can build its
# image there. Prints the socket path on its last line.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
socket=${HARNESS_PODMAN_SOCKET:-/run/harness-podman/podman.sock}
log=${HARNESS_PODMAN_LOG:-/tmp/harness-podman.log}

if [ "$(id -u)" != 0 ]; then
  echo "ensure-podman.sh starts rootful Podman and must run as root" >&2
  exit 1
fi
if ! command -v podman >/dev/null 2>&1; then
  echo "podman: installing Debian's podman"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman >/dev/null
fi

ping() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsS --max-time 5 --unix-socket "$socket" http://podman/_ping >/dev/null 2>&1
  else
    timeout 10 podman --remote --url "unix://$socket" version >/dev/null 2>&1
  fi
}
if ping; then
  echo "podman service: running"
else
  mkdir -p "$(dirname "$socket")"
  rm -f "$socket"
  echo "podman service: starting"
  # From /: conmon inherits the service's working directory and cannot start a container once that
  # directory (a CI clone) is deleted ("write child: broken pipe"; seen when a clone was re-made).
  (cd / && exec nohup podman system service --time=0 "unix://$socket") </dev/null >"$log" 2>&1 &
  for _ in $(seq 1 60); do
    ping && break
    sleep 0.5
  done
  if ! ping; then
    echo "podman service did not come up; its log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
fi

# The Dockerfile's base: Podman resolves the short name to the local localhost/ copy.
base=$(sed -n 's/^ARG BASE_IMAGE=//p' "$here/sandbox/Dockerfile" | head -n 1)
if podman image exists "$base"; then
  echo "podman base image $base: present"
elif docker image inspect "$base" >/dev/null 2>&1; then
  docker save "$base" | podman load -q >/dev/null
  echo "podman base image $base: copied from Docker"
else
  echo "podman base image $base: missing in Podman and in Docker (run scripts/build-base-image.sh first)" >&2
  exit 1
fi
# Rootless Podman beside it (test/integration/podman-rootless.test.ts); a failure here leaves that test
# to fail in CI with its own message, and the rootful tests still run.
bash "$here/scripts/ensure-podman-rootless.sh" >&2 || echo "podman rootless: not started (see above)" >&2
echo "$socket"
