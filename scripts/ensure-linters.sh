#!/usr/bin/env bash
# Makes sure the linters of harness's other languages are here: Debian's shellcheck (the shell
# scripts) and pyflakes3 (the programs that run inside the sandbox). `npm run check` needs both.
set -euo pipefail

missing=()
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
command -v pyflakes3 >/dev/null 2>&1 || missing+=(pyflakes3)
if [ ${#missing[@]} -eq 0 ]; then
  echo "linters: shellcheck and pyflakes3 present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "missing ${missing[*]}: install them (e.g. 'sudo apt-get install ${missing[*]}')" >&2
  exit 1
fi
echo "linters: installing Debian's ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
