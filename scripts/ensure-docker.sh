#!/usr/bin/env bash
# Makes sure a Docker engine answers: installs Debian's docker.io when there is no engine binary, and
# starts dockerd in the background when none is running. Sandboxes use no network by default, so the
# engine needs no bridge and no iptables rules.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  echo "docker engine: running"
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "no Docker engine here: install Docker (https://docs.docker.com/engine/install/) and start it" >&2
    exit 1
  fi
  echo "docker engine: installing Debian's docker.io"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if [ "$(id -u)" != 0 ]; then
  echo "the Docker engine is installed but not running: start it (e.g. 'sudo systemctl start docker')" >&2
  exit 1
fi
echo "docker engine: starting dockerd"
log=${HARNESS_DOCKERD_LOG:-/tmp/harness-dockerd.log}
# From /: a daemon keeps its working directory, and its children (shims) fail to start once the
# directory it was started in (a CI clone) is deleted.
(cd / && exec nohup dockerd --bridge=none --iptables=false) </dev/null >"$log" 2>&1 &
for _ in $(seq 1 120); do
  if docker info >/dev/null 2>&1; then
    echo "docker engine: running"
    exit 0
  fi
  sleep 0.5
done
echo "dockerd did not come up; its log:" >&2
tail -n 30 "$log" >&2
exit 1
