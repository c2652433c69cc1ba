#!/bin/sh
# /usr/local/bin/cargo in harness's sandbox image, before Debian's /usr/bin/cargo on PATH. Cargo
# reads no variable for a source replacement, so `--allow cargo` on a host whose cargo uses a
# mirror sets HARNESS_CARGO_CONFIG (one `--config` value, a TOML key and inline table) and this
# passes it on. Unset, cargo runs exactly as it would without this file.
if [ -n "${HARNESS_CARGO_CONFIG:-}" ]; then
  set -- --config "$HARNESS_CARGO_CONFIG" "$@"
fi
exec /usr/bin/cargo "$@"
