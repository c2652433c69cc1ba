#!/usr/bin/env bash
# One-time setup on a fresh machine: dependencies, the CLI bundle, a running Docker engine, the
# sandbox's base image (built from Debian's packages where no registry is reachable) and the image.
set -euo pipefail
cd "$(dirname "$0")/.."

npm ci --no-audit --no-fund
bash scripts/ensure-linters.sh
npm run build
bash scripts/ensure-docker.sh
bash scripts/build-base-image.sh
# Builds (or finds) the sandbox image now, so the first run does not wait for it.
node bin/harness.mjs image

# A starting workspace for the README's first command. harness never runs commands as root, so when
# setup runs as root the folder goes to the invoking sudo user, or else to uid 1000.
if [ ! -e proj ]; then
  mkdir proj
  if [ "$(id -u)" = 0 ]; then chown "${SUDO_UID:-1000}:${SUDO_GID:-1000}" proj; fi
  echo "created ./proj (an empty workspace owned by $(stat -c %u:%g proj))"
fi
