#!/bin/sh
# /usr/local/bin/cargo in harness's sandbox image, before Debian's /usr/bin/cargo on PATH. Cargo
# reads no variable for a source replacement, so `--allow cargo` on a host whose cargo uses a
# mirror sets HARNESS_CARGO_CONFIG (`--config` values, one a line: dotted TOML keys and their
# values) and this passes each on. Unset, cargo runs exactly as it would without this file.
if [ -n "${HARNESS_CARGO_CONFIG:-}" ]; then
  harness_ifs=$IFS
  IFS='
'
  set -f
  for harness_setting in $HARNESS_CARGO_CONFIG; do
    set -- --config "$harness_setting" "$@"
  done
  set +f
  IFS=$harness_ifs
fi
exec /usr/bin/cargo "$@"
