# shellcheck shell=bash disable=SC2034
# What ensure-k8s.sh and stop-k8s.sh share: versions, paths, ports. Sourced, never run.
K8S_VERSION=${HARNESS_K8S_VERSION:-v1.34.4}
# The built binaries, kept across clusters (and never removed by stop-k8s.sh): only a fresh machine
# pays for the build.
K8S_CACHE_ROOT=${HARNESS_K8S_CACHE:-/var/cache/harness/k8s}
K8S_BIN=$K8S_CACHE_ROOT/$K8S_VERSION/bin
# Everything a running cluster owns: configs, certificates, etcd's data, containerd's root and state,
# kubelet's root, logs, pid files. One cluster per machine, whichever worktree started it.
K8S_STATE=${HARNESS_K8S_STATE:-/var/lib/harness-k8s}
K8S_KUBECONFIG=$K8S_STATE/admin.kubeconfig
K8S_CONTAINERD_SOCK=$K8S_STATE/containerd/containerd.sock
# The node's name is its address, so it resolves to loopback without touching /etc/hosts (kubelet
# takes an IP given as the hostname as the node's InternalIP, where the apiserver reaches it).
K8S_NODE=127.0.0.1
K8S_ETCD_PORT=23790
K8S_ETCD_PEER_PORT=23800
K8S_APISERVER_PORT=16443
K8S_SCHEDULER_PORT=10359
# The daemons in start order; stop-k8s.sh stops them in reverse.
K8S_DAEMONS=(etcd containerd kube-apiserver kube-scheduler kubelet)
# The kernel tunables kubelet insists on (it would write them itself without protectKernelDefaults).
K8S_SYSCTLS=(vm.overcommit_memory=1 vm.panic_on_oom=0 kernel.panic=10 kernel.panic_on_oops=1
  kernel.keys.root_maxkeys=1000000 kernel.keys.root_maxbytes=25000000)
# kubernetes-sigs/agent-sandbox's controller, with its extensions (SandboxTemplate, SandboxWarmPool,
# SandboxClaim): optional (HARNESS_K8S_AGENT_SANDBOX=1), built once per version into the same cache.
K8S_AGENT_SANDBOX_VERSION=${HARNESS_K8S_AGENT_SANDBOX_VERSION:-v0.5.2}
K8S_AGENT_SANDBOX_DIR=$K8S_CACHE_ROOT/agent-sandbox/$K8S_AGENT_SANDBOX_VERSION
# The cgroup parents kubelet (cgroupfs driver) creates in every v1 hierarchy.
K8S_CGROUP_PARENTS=(kubepods)

k8s_log() { echo "k8s: $*" >&2; }

# The pid in $K8S_STATE/run/NAME.pid if that process is still the one we started (its command line
# names our state directory or binary), else nothing.
k8s_pid() {
  local file=$K8S_STATE/run/$1.pid pid
  [ -r "$file" ] || return 1
  pid=$(cat "$file")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -e "$K8S_STATE" -e "$K8S_BIN" || return 1
  echo "$pid"
}

# Serialises ensure and stop across worktrees. The lock is on the cache directory, which stays, so
# no lock file is left behind. A stop run by a failing ensure inherits the ensure's lock.
k8s_lock() {
  [ -n "${HARNESS_K8S_LOCKED:-}" ] && return 0
  mkdir -p "$K8S_CACHE_ROOT"
  exec 9<"$K8S_CACHE_ROOT"
  if ! flock -w 1800 9; then
    k8s_log "another ensure-k8s/stop-k8s held the lock for 30 minutes"
    exit 1
  fi
  export HARNESS_K8S_LOCKED=1
}
