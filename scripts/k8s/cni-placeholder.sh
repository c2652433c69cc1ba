#!/bin/sh
# A CNI plugin that creates nothing. containerd's CRI refuses a pod whose CNI result has no eth0
# address, and the test cluster must not give pods a network (the sandbox runs with none), so this
# reports one placeholder address from a documentation range (RFC 5737 TEST-NET-3, never routed and
# never an address of this machine). The pod's network namespace keeps only `lo`, which containerd
# brings up itself with the loopback plugin.
set -eu
input=$(cat)
version=$(printf '%s' "$input" | sed -n 's/.*"cniVersion"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
version=${version:-1.0.0}
case "${CNI_COMMAND:-}" in
  ADD)
    printf '{"cniVersion":"%s","interfaces":[{"name":"eth0","sandbox":"%s"}],"ips":[{"address":"203.0.113.10/32","interface":0}],"dns":{}}\n' \
      "$version" "${CNI_NETNS:-}"
    ;;
  DEL | CHECK | GC | STATUS) ;;
  VERSION)
    printf '{"cniVersion":"%s","supportedVersions":["0.4.0","1.0.0","1.1.0"]}\n' "$version"
    ;;
  *)
    printf '{"cniVersion":"%s","code":4,"msg":"unknown CNI_COMMAND %s"}\n' "$version" "${CNI_COMMAND:-}"
    exit 1
    ;;
esac
