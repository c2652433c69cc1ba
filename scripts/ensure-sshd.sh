#!/usr/bin/env bash
# Makes sure Debian's sshd and ssh client are installed for the ssh:// engine tests. The tests
# (test/support/ssh-engine.ts) start their own sshd on 127.0.0.1 with a throwaway config and keys;
# nothing here starts, enables or configures the system's ssh service.
set -euo pipefail

if [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1; then
  echo "sshd: installed"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "sshd (openssh-server) is missing: the ssh:// engine tests need it ('sudo apt-get install openssh-server')" >&2
  exit 1
fi
echo "sshd: installing Debian's openssh-server"
apt-get update -qq
# policy-rc.d exit 101: the package's postinst must not start the system's sshd (the tests start their own).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
echo "sshd: installed in ${SECONDS} s"
