#!/usr/bin/env bash
# One-time setup on a fresh machine: dependencies, the CLI bundle, a running Docker engine, the
# sandbox's base image (built from Debian's packages where no registry is reachable) and the image.
set -euo pipefail
cd "$(dirname "$0")/.."

npm ci --no-audit --no-fund
npm run build
bash scripts/ensure-docker.sh
bash scripts/build-base-image.sh
# Builds (or finds) the sandbox image now, so the first run does not wait for it.
node bin/harness.mjs image
