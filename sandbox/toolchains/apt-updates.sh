#!/bin/sh
# Used while the sandbox image builds: adds the release's security and point-release updates to apt's
# sources when none lists them (a debootstrap base lists the release alone; Debian's own images list
# both, and a second listing would only make apt warn).
set -eu
# shellcheck source=/dev/null
. /etc/os-release
suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
if grep -rqs -- "$suite-security" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  exit 0
fi
cat >/etc/apt/sources.list.d/harness-updates.list <<LIST
deb http://deb.debian.org/debian $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
LIST
