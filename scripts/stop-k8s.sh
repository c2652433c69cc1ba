#!/usr/bin/env bash
# Stops the test cluster scripts/ensure-k8s.sh started and leaves the machine as found: no processes
# (daemons, containerd shims, pod processes), no mounts (container rootfs, shm, netns), no cgroups
# (the parents kubelet creates in every v1 hierarchy), the sysctls kubelet wanted put back, no state
# directory. The built binaries in the cache stay. Safe to run when nothing runs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/k8s/common.sh
source "$repo/scripts/k8s/common.sh"
started=$(date +%s%N)

if [ "$(id -u)" != 0 ]; then
  k8s_log "needs root: run it with sudo"
  exit 1
fi
k8s_lock

# running PID: the process exists and is not a zombie (an exited daemon stays one until whoever
# adopted it reaps it).
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}
# stop_pids PID...: SIGTERM, up to 10 s, then SIGKILL.
stop_pids() {
  local pid deadline
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  deadline=$(($(date +%s) + 10))
  for pid in "$@"; do
    while running "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.05; done
    if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  done
  for pid in "$@"; do
    while running "$pid"; do sleep 0.05; done
  done
}
stop_daemon() {
  local pid
  if pid=$(k8s_pid "$1"); then
    stop_pids "$pid"
    k8s_log "$1 stopped ($((($(date +%s%N) - started) / 1000000)) ms)"
  fi
}

# The processes the cluster left: containerd shims serving our containerd, and anything in a pod's
# cgroup (a container whose shim is gone). Matched by what they are, never by a name alone.
leftover_pids() {
  {
    grep -laF -- "$K8S_CONTAINERD_SOCK" /proc/[0-9]*/cmdline 2>/dev/null || true
    grep -lE '^[0-9]+:[^:]*:/kubepods(/|$)' /proc/[0-9]*/cgroup 2>/dev/null || true
  } | cut -d/ -f3 | sort -u | while read -r pid; do
    # Not this script, nor the grep that matched its own command line.
    [ "$pid" != $$ ] && [ "$pid" != "$BASHPID" ] && running "$pid" && echo "$pid"
  done
}

# agent-sandbox's controller (HARNESS_K8S_AGENT_SANDBOX=1) first, so that it recreates nothing.
stop_daemon agent-sandbox-controller
stop_daemon kubelet
stop_daemon kube-scheduler
stop_daemon kube-apiserver
# Pods' containers: killed and deleted through our containerd while it still runs, which ends their
# shims and unmounts their root filesystems.
if pid=$(k8s_pid containerd) && [ -S "$K8S_CONTAINERD_SOCK" ]; then
  ctr_k8s() { timeout 20 ctr --address "$K8S_CONTAINERD_SOCK" --namespace k8s.io "$@"; }
  mapfile -t tasks < <(ctr_k8s tasks ls -q 2>/dev/null || true)
  for task in "${tasks[@]}"; do
    ctr_k8s tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
  done
  for task in "${tasks[@]}"; do
    ctr_k8s tasks delete -f "$task" >/dev/null 2>&1 || true
  done
  mapfile -t containers < <(ctr_k8s containers ls -q 2>/dev/null || true)
  [ ${#containers[@]} = 0 ] || ctr_k8s containers delete "${containers[@]}" >/dev/null 2>&1 || true
  # The CNI library's result cache (/var/lib/cni/results/NETWORK-ID-IFNAME): no CNI DEL ran for these
  # sandboxes, which would have removed their entries.
  for id in "${containers[@]}"; do
    rm -f /var/lib/cni/results/*-"$id"-*
  done
  stop_pids "$pid"
  k8s_log "pods and containerd stopped ($((($(date +%s%N) - started) / 1000000)) ms)"
fi
mapfile -t pids < <(leftover_pids)
if [ ${#pids[@]} -gt 0 ]; then
  k8s_log "killing ${#pids[@]} leftover shim or pod processes"
  kill -KILL "${pids[@]}" 2>/dev/null || true
  stop_pids "${pids[@]}"
fi
stop_daemon etcd

# Mounts under the state directory (container root filesystems, sandbox shm, network namespaces,
# kubelet volumes), deepest first.
mapfile -t mounts < <(awk -v root="$K8S_STATE/" 'index($5, root) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
for mount in "${mounts[@]}"; do
  mount=$(printf '%b' "${mount//\\/\\0}")
  umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || k8s_log "could not unmount $mount"
done

# Cgroups: kubelet's parents (and the pod and container cgroups below them) in every v1 hierarchy,
# and in the unified one if it has them. rmdir only removes empty cgroups.
for hierarchy in /sys/fs/cgroup/*/; do
  for parent in "${K8S_CGROUP_PARENTS[@]}"; do
    [ -d "$hierarchy$parent" ] || continue
    find "$hierarchy$parent" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ ! -d "$hierarchy$parent" ] || k8s_log "cgroup $hierarchy$parent is not empty; left"
  done
done

# The sysctls kubelet wanted, back to what they were.
if [ -f "$K8S_STATE/sysctl.saved" ]; then
  while IFS= read -r setting; do
    if [ -n "$setting" ]; then sysctl -q -w "$setting" || k8s_log "could not restore $setting"; fi
  done <"$K8S_STATE/sysctl.saved"
fi

# What kubelet leaves at fixed paths: container-log symlinks into our pod-logs directory, the
# device-plugin socket. Then the directories ensure-k8s.sh found missing, if nothing else uses them.
if [ -d /var/log/containers ]; then
  find /var/log/containers -maxdepth 1 -type l -lname "$K8S_STATE/*" -delete
fi
rm -f /var/lib/kubelet/device-plugins/kubelet.sock
if [ -f "$K8S_STATE/created-dirs" ]; then
  while IFS= read -r dir; do
    [ -d "$dir" ] && find "$dir" -depth -type d -empty -delete
    [ ! -e "$dir" ] || k8s_log "$dir is not empty; left"
  done <"$K8S_STATE/created-dirs"
fi

# The iptables chains kubelet adds unless makeIPTablesUtilChains is false (as configured here), in
# case a kubelet ran without it; only when ensure-k8s.sh found none there.
for iptables in iptables ip6tables; do
  if [ ! -f "$K8S_STATE/no-kube-chains-before" ] || ! command -v "$iptables" >/dev/null 2>&1; then continue; fi
  "$iptables" -w -t filter -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
  "$iptables" -w -t filter -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
  for chain in filter:KUBE-FIREWALL filter:KUBE-KUBELET-CANARY nat:KUBE-KUBELET-CANARY \
    mangle:KUBE-KUBELET-CANARY mangle:KUBE-IPTABLES-HINT; do
    if "$iptables" -w -t "${chain%%:*}" -n -L "${chain#*:}" >/dev/null 2>&1; then
      "$iptables" -w -t "${chain%%:*}" -F "${chain#*:}"
      "$iptables" -w -t "${chain%%:*}" -X "${chain#*:}" || k8s_log "could not remove $iptables chain $chain"
    fi
  done
done

if [ -d "$K8S_STATE" ]; then
  rm -rf --one-file-system "$K8S_STATE"
  k8s_log "stopped in $((($(date +%s%N) - started) / 1000000)) ms"
else
  k8s_log "no cluster state in $K8S_STATE: nothing to stop"
fi
