#!/usr/bin/env bash
# Lints what is not TypeScript: every shell script git knows (and .ci/run) with shellcheck, every
# Python program with pyflakes3 and a byte-compile. Part of `npm run check`.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in shellcheck pyflakes3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "lint-programs: $tool is missing: run 'bash scripts/ensure-linters.sh'" >&2
    exit 1
  fi
done

mapfile -t shells < <({ git ls-files -co --exclude-standard -- '*.sh'; echo .ci/run; } | grep -v '^node_modules/' | sort -u)
mapfile -t pythons < <(git ls-files -co --exclude-standard -- '*.py' | grep -v -e '^node_modules/' -e '^dist/' | sort -u)

status=0
shellcheck --severity=style "${shells[@]}" || status=1
if [ ${#pythons[@]} -gt 0 ]; then
  pyflakes3 "${pythons[@]}" || status=1
  for f in "${pythons[@]}"; do
    python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$f" || status=1
  done
fi
[ "$status" = 0 ] && echo "lint-programs: ${#shells[@]} shell scripts, ${#pythons[@]} python programs clean"
exit "$status"
