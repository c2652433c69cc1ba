#!/usr/bin/env bash
# Makes sure a real single-node Kubernetes cluster runs on this machine for harness's Kubernetes
# backend tests, and prints its kubeconfig's path on the LAST line of stdout (everything else goes to
# stderr). Idempotent: a healthy cluster started earlier (from any worktree) is reused.
#
# What runs, all on 127.0.0.1 and under $HARNESS_K8S_STATE (default /var/lib/harness-k8s):
# etcd (Debian's), a containerd with CRI of its own (not Docker's), kube-apiserver, kube-scheduler
# and kubelet (built once from the Go module proxy into $HARNESS_K8S_CACHE, default
# /var/cache/harness/k8s, with a kubectl of the same version). No controller-manager: the
# ServiceAccounts a pod needs are created here. HARNESS_K8S_AGENT_SANDBOX=1 adds agent-sandbox's
# controller (scripts/k8s/start-agent-sandbox.sh).
# Pods get no network but lo (scripts/k8s/cni-placeholder.sh). Images come from the Docker engine
# (`docker save | ctr import`): the pause image built here and harness's sandbox image.
# scripts/stop-k8s.sh stops it all and leaves the machine as found; a failing start runs it too.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
here=$repo/scripts/k8s
# shellcheck source=scripts/k8s/common.sh
source "$here/common.sh"
started=$(date +%s%N)

if [ "$(id -u)" != 0 ]; then
  k8s_log "needs root (kubelet and containerd manage cgroups and mounts): run it with sudo"
  exit 1
fi
k8s_lock

ctr_k8s() { ctr --address "$K8S_CONTAINERD_SOCK" --namespace k8s.io "$@"; }
# The kubectl built with the cluster: same version, and Debian has none.
kube() { "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" --request-timeout=20s "$@"; }
elapsed() { local ms=$((($(date +%s%N) - started) / 1000000)); printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100)); }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local seconds=$1 deadline
  shift
  deadline=$(($(date +%s) + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then return 1; fi
    sleep 0.2
  done
}

# The tag of harness's sandbox image (built first if sandbox/ changed): what the backend's pods run.
# HARNESS_K8S_SANDBOX_IMAGE names another Docker image instead.
sandbox_image() {
  if [ -n "${HARNESS_K8S_SANDBOX_IMAGE:-}" ]; then
    echo "$HARNESS_K8S_SANDBOX_IMAGE"
  elif [ -f "$repo/dist/cli.js" ]; then
    node "$repo/bin/harness.mjs" image | tail -n 1
  else
    k8s_log "harness is not built in $repo: run 'npm run build' (scripts/setup.sh does) or set HARNESS_K8S_SANDBOX_IMAGE"
    return 1
  fi
}

# Imports a Docker image into the cluster's containerd unless it is there already.
import_image() {
  local image=$1 full
  case "$image" in
    */*) full=$image ;;
    *) full=docker.io/library/$image ;;
  esac
  [[ $full == *:* ]] || full=$full:latest
  if ctr_k8s images ls -q | grep -qxF "$full"; then return 0; fi
  k8s_log "importing $image from Docker"
  docker save "$image" | ctr_k8s images import - >/dev/null
}

node_ready() {
  [ "$(kube get node "$K8S_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
# An exec in the check pod answers as uid 1000 with only lo.
check_pod_answers() {
  # shellcheck disable=SC2016 # expanded in the pod
  [ "$(kube exec -n default harness-k8s-check -- sh -c 'echo "$(id -u) $(ls /sys/class/net)"' 2>/dev/null)" = "1000 lo" ]
}
# Runs the check pod (again, if someone deleted it) with IMAGE and waits until an exec answers.
check_pod() {
  local image=$1
  if ! kube get pod -n default harness-k8s-check >/dev/null 2>&1; then
    sed "s#@IMAGE@#$image#" "$here/check-pod.yaml" | kube apply -f - >/dev/null
  fi
  kube wait -n default --for=condition=Ready pod/harness-k8s-check --timeout=120s >/dev/null &&
    wait_for 30 check_pod_answers
}

# HARNESS_K8S_AGENT_SANDBOX=1: kubernetes-sigs/agent-sandbox's controller with its extensions
# (SandboxTemplate, SandboxWarmPool, SandboxClaim) too, for harness's --kube-warm-pool. Off by
# default: its first build takes minutes on 2 cores (scripts/k8s/start-agent-sandbox.sh).
agent_sandbox() {
  [ "${HARNESS_K8S_AGENT_SANDBOX:-0}" = 1 ] || return 0
  bash "$here/start-agent-sandbox.sh"
}

# Fast path: every daemon we started is alive, the node is Ready and the check pod answers (it is
# recreated if it was deleted). Pods already running are left alone.
healthy=1
for daemon in "${K8S_DAEMONS[@]}"; do
  k8s_pid "$daemon" >/dev/null || healthy=0
done
if [ "$healthy" = 1 ] && kube get --raw /readyz >/dev/null 2>&1 && node_ready; then
  image=$(sandbox_image)
  import_image "$image"
  if check_pod_answers || check_pod "$image"; then
    k8s_log "cluster already running and healthy ($(elapsed))"
    agent_sandbox || { k8s_log "the agent-sandbox controller did not start"; exit 1; }
    echo "$K8S_KUBECONFIG"
    exit 0
  fi
fi
if [ -d "$K8S_STATE" ]; then
  k8s_log "a cluster is left over but not healthy: stopping it first"
  bash "$repo/scripts/stop-k8s.sh"
fi

# Packages from Debian. policy-rc.d exit 101: the packages' postinst must not start the system's
# etcd or containerd services (this cluster runs its own).
need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v ctr >/dev/null 2>&1 || need+=(containerd)
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -x /usr/lib/cni/loopback ] || need+=(containernetworking-plugins)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  k8s_log "installing Debian's ${need[*]}"
  apt-get update -qq
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  rm -f "$policy"
  trap - EXIT
fi
for tool in docker go; do
  command -v "$tool" >/dev/null 2>&1 || { k8s_log "$tool is missing"; exit 1; }
done

# The binaries: built once per version (minutes on 2 cores), then reused from the cache.
if ! bash "$here/build-binaries.sh" "$K8S_VERSION" "$K8S_BIN" kube-apiserver kubelet kube-scheduler kubectl; then
  k8s_log "building Kubernetes $K8S_VERSION failed"
  exit 1
fi
# The pause image: a static Go binary in a FROM-scratch image, cached as a docker-archive tar.
pause_tar=$K8S_CACHE_ROOT/pause-$(sha256sum "$here/pause/main.go" "$here/pause/Dockerfile" | sha256sum | cut -c1-12).tar
if [ ! -s "$pause_tar" ]; then
  k8s_log "building the pause image"
  context=$(mktemp -d /tmp/harness-k8s-pause.XXXXXX)
  (cd "$here/pause" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$context/pause" .)
  cp "$here/pause/Dockerfile" "$context/"
  docker build -q -t harness.local/pause:1 "$context" >/dev/null 2>&1
  docker save harness.local/pause:1 >"$pause_tar.partial"
  docker rmi harness.local/pause:1 >/dev/null
  mv "$pause_tar.partial" "$pause_tar"
  rm -rf "$context"
fi
image=$(sandbox_image)
docker image inspect "$image" >/dev/null || { k8s_log "Docker has no image $image"; exit 1; }

# From here on, a failure tears down whatever was started.
teardown_on_failure() {
  local status=$?
  [ "$status" = 0 ] && return
  k8s_log "start failed (exit $status); the last lines of each log:"
  for log in "$K8S_STATE"/logs/*.log; do
    [ -f "$log" ] && { echo "--- $log" >&2; tail -n 15 "$log" >&2; }
  done
  bash "$repo/scripts/stop-k8s.sh" || true
  exit "$status"
}
trap teardown_on_failure EXIT

mkdir -p "$K8S_STATE"/{run,logs,pki,etcd,containerd,kubelet,pod-logs,cni/bin,cni/net.d}
chmod 700 "$K8S_STATE"
# What stop-k8s.sh must put back: the sysctls kubelet wants, and /var/log/containers (kubelet always
# creates it, whatever its podLogsDir).
for setting in "${K8S_SYSCTLS[@]}"; do
  key=${setting%%=*}
  echo "$key=$(sysctl -n "$key")" >>"$K8S_STATE/sysctl.saved"
done
# What stop-k8s.sh must remove again: the directories kubelet and containerd's CNI library create at
# fixed paths whatever their configuration (container-log symlinks, the device-plugin socket, the CNI
# result cache, the shims' sockets), when they did not exist before.
for dir in /var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd; do
  [ -e "$dir" ] || echo "$dir" >>"$K8S_STATE/created-dirs"
done
if ! iptables-save 2>/dev/null | grep -q KUBE-; then touch "$K8S_STATE/no-kube-chains-before"; fi

# --- certificates (openssl, ECDSA P-256): one CA signs everything ---------------------------------
pki=$K8S_STATE/pki
openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
openssl req -x509 -new -key "$pki/ca.key" -subj /CN=harness-k8s-ca -days 3650 -out "$pki/ca.crt" 2>/dev/null
# cert NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
cert() {
  local name=$1 subject=$2 usage=$3 san=${4:-}
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$pki/$name.ext"
  openssl req -new -key "$pki/$name.key" -subj "$subject" 2>/dev/null |
    openssl x509 -req -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 3650 \
      -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
}
cert apiserver /CN=kube-apiserver serverAuth \
  "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:198.51.100.1"
cert admin "/O=system:masters/CN=harness-admin" clientAuth
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert kubelet "/O=system:nodes/CN=system:node:$K8S_NODE" clientAuth
cert kubelet-serving "/CN=$K8S_NODE" serverAuth "IP:127.0.0.1,DNS:localhost"
cert kube-scheduler /CN=system:kube-scheduler clientAuth
openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
chmod 600 "$pki"/*.key

# kubeconfig NAME: a kubeconfig with the client certificate NAME, certificates inlined.
kubeconfig() {
  local name=$1
  cat >"$K8S_STATE/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: harness-k8s
    cluster:
      server: https://127.0.0.1:$K8S_APISERVER_PORT
      certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
  - name: $name
    user:
      client-certificate-data: $(base64 -w0 <"$pki/$name.crt")
      client-key-data: $(base64 -w0 <"$pki/$name.key")
contexts:
  - name: harness-k8s
    context:
      cluster: harness-k8s
      user: $name
current-context: harness-k8s
EOF
  chmod 600 "$K8S_STATE/$name.kubeconfig"
}
kubeconfig admin
kubeconfig kubelet
kubeconfig kube-scheduler

# start NAME COMMAND...: a daemon in its own session, its output in logs/NAME.log, its pid in run/.
start() {
  local name=$1
  shift
  # 9<&-: the daemons (and containerd's shims) must not inherit, and so hold, k8s_lock's lock.
  # `env -C /`: they must not keep the caller's directory (a CI clone deleted under them). Not a
  # subshell: $! is the daemon itself from its first exec on, and k8s_pid knows it by its argv.
  setsid env -C / "$@" </dev/null >"$K8S_STATE/logs/$name.log" 2>&1 9<&- &
  echo $! >"$K8S_STATE/run/$name.pid"
}
# alive NAME: fails (with the log's tail) if the daemon has exited.
alive() {
  k8s_pid "$1" >/dev/null && return 0
  k8s_log "$1 exited"
  return 1
}

# --- etcd --------------------------------------------------------------------------------------
start etcd etcd --name harness-k8s --data-dir "$K8S_STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
  --initial-cluster "harness-k8s=http://127.0.0.1:$K8S_ETCD_PEER_PORT" --enable-v2=false
wait_for 60 curl -fsS "http://127.0.0.1:$K8S_ETCD_PORT/health" || { alive etcd; k8s_log "etcd not healthy in 60 s"; exit 1; }
k8s_log "etcd healthy ($(elapsed))"

# --- kube-apiserver (started now, waited for after containerd and the images) --------------------
start kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$K8S_ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$K8S_APISERVER_PORT" \
  --cert-dir "$pki" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" --anonymous-auth=false \
  --authorization-mode Node,RBAC \
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
  --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range 198.51.100.0/24 --endpoint-reconciler-type none \
  --allow-privileged=false --profiling=false

# --- containerd with CRI, its own everything ----------------------------------------------------
sed "s#@STATE@#$K8S_STATE#g" "$here/containerd.toml" >"$K8S_STATE/containerd/config.toml"
ln -s /usr/lib/cni/loopback "$K8S_STATE/cni/bin/loopback"
install -m 755 "$here/cni-placeholder.sh" "$K8S_STATE/cni/bin/harness-placeholder"
cp "$here/cni.conflist" "$K8S_STATE/cni/net.d/10-harness.conflist"
start containerd containerd --config "$K8S_STATE/containerd/config.toml"
wait_for 60 ctr --address "$K8S_CONTAINERD_SOCK" version || { alive containerd; k8s_log "containerd not answering in 60 s"; exit 1; }
k8s_log "containerd up ($(elapsed))"
ctr_k8s images import - <"$pause_tar" >/dev/null
import_image "$image"
k8s_log "images imported ($(elapsed))"

wait_for 120 kube get --raw /readyz || { alive kube-apiserver; k8s_log "kube-apiserver not ready in 120 s"; exit 1; }
k8s_log "kube-apiserver ready ($(elapsed))"
kube apply -f "$here/cluster-objects.yaml" >/dev/null
# The CA bundle a projected service-account token volume reads (the controller-manager's
# root-ca-cert-publisher would write it), so a pod that does ask for a token can start.
for namespace in default harness; do
  kube create configmap kube-root-ca.crt -n "$namespace" --from-file=ca.crt="$pki/ca.crt" >/dev/null
done

# --- kube-scheduler ------------------------------------------------------------------------------
start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig "$K8S_STATE/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig "$K8S_STATE/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig "$K8S_STATE/kube-scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$K8S_SCHEDULER_PORT" --cert-dir "$K8S_STATE/scheduler-certs" \
  --leader-elect=false --profiling=false

# --- kubelet -------------------------------------------------------------------------------------
# The kernel tunables kubelet insists on are set here (saved above, restored by stop-k8s.sh) and
# kubelet runs with protectKernelDefaults, so it only checks them.
for setting in "${K8S_SYSCTLS[@]}"; do
  sysctl -q -w "$setting"
done
# harness's seccomp profile, for pods that ask for it: localhostProfile: harness/sandbox.json.
install -D -m 644 "$repo/docker/sandbox-seccomp.json" "$K8S_STATE/kubelet/seccomp/harness/sandbox.json"
sed -e "s#@STATE@#$K8S_STATE#g" -e "s#^maxOpenFiles: .*#maxOpenFiles: $(ulimit -Hn)#" "$here/kubelet-config.yaml" >"$K8S_STATE/kubelet/config.yaml"
start kubelet "$K8S_BIN/kubelet" --config "$K8S_STATE/kubelet/config.yaml" \
  --kubeconfig "$K8S_STATE/kubelet.kubeconfig" --root-dir "$K8S_STATE/kubelet" \
  --cert-dir "$K8S_STATE/kubelet/pki" --hostname-override "$K8S_NODE"
wait_for 120 node_ready || { alive kubelet; k8s_log "node not Ready in 120 s"; exit 1; }
# kubelet registers the node tainted not-ready; the controller-manager's node lifecycle controller
# would lift the taint once Ready, and none runs here.
kube taint node "$K8S_NODE" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
k8s_log "node Ready ($(elapsed))"
alive kube-scheduler

# --- a hardened pod that answers an exec ---------------------------------------------------------
check_pod "$image" || { k8s_log "the check pod does not answer an exec as uid 1000 with only lo"; exit 1; }
k8s_log "hardened pod answers an exec: cluster up ($(elapsed))"
agent_sandbox || { k8s_log "the agent-sandbox controller did not start"; exit 1; }

trap - EXIT
echo "$K8S_KUBECONFIG"
