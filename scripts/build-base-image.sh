#!/usr/bin/env bash
# Makes the sandbox Dockerfile's base image available without a container registry.
# Tries a normal pull first; where that fails (this project's CI has no registry), builds the same
# Debian release from Debian's own packages with debootstrap and imports it under the base's tag.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
base=$(sed -n 's/^ARG BASE_IMAGE=//p' "$here/sandbox/Dockerfile" | head -n 1)
suite=${HARNESS_DEBIAN_SUITE:-bookworm}

if docker image inspect "$base" >/dev/null 2>&1; then
  echo "base image $base: present"
  exit 0
fi
if timeout 60 docker pull "$base" >/dev/null 2>&1; then
  echo "base image $base: pulled"
  exit 0
fi

echo "base image $base: no registry reachable; building it from Debian's packages (debootstrap $suite)"
if ! command -v debootstrap >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
work=$(mktemp -d /tmp/harness-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The packages the sandbox Dockerfile installs, so its apt step has little left to fetch.
debootstrap --variant=minbase \
  --include=bash,coreutils,procps,git,python3,ca-certificates,util-linux \
  "$suite" "$work/root" >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log"; exit 1; }
# Drop the package lists and caches: the image stays small and apt-get update refreshes them anyway.
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
tar -C "$work/root" -c . | docker import - "$base" >/dev/null
echo "base image $base: imported from debootstrap"
