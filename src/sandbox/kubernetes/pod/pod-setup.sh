# shellcheck shell=sh
# The pod's first container (an init container: root holding only CAP_CHOWN, gone before any command
# runs). Kubernetes makes every emptyDir root-owned with mode 0777; Docker's tmpfs options (uid=,
# mode=) have no pod equivalent, so this gives the sandbox user its home, its state directory and the
# workspace, and /tmp its sticky bit. With $3 = 1 (--network none) it first checks that the pod's
# network namespace holds nothing but lo, and fails the pod with the reason otherwise: a cluster
# whose pods get an interface cannot give a sandbox "no network".
# $1 uid, $2 gid, $3 1 to require lo only, $4 home, $5 state directory, $6 workspace; $7, $8, $9 (the
# network devices' directory, where the reason goes, /tmp) only differ in tests.
uid=$1; gid=$2; lo_only=$3; home=$4; state=$5; workdir=$6
net=${7:-/sys/class/net}; reason=${8:-/dev/termination-log}; tmp=${9:-/tmp}
if [ "$lo_only" = 1 ]; then
  extra=""
  for d in "$net"/*; do
    n=${d##*/}
    [ "$n" = lo ] || [ "$n" = "*" ] || extra="$extra $n"
  done
  if [ -n "$extra" ]; then
    echo "the pod has network interfaces besides lo:$extra; --network none needs pods without a network (docs/scale-out.md)" >"$reason"
    exit 3
  fi
fi
chmod 1777 "$tmp" && chmod 0700 "$home" "$state" && chmod 0755 "$workdir" || exit 4
chown "$uid:$gid" "$home" "$state" "$workdir" || exit 5
