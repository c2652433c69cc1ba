#!/usr/bin/env bash
# Runs kubernetes-sigs/agent-sandbox's controller with its extensions on the test cluster, as a
# process on the host like the cluster's other daemons: built once (build-agent-sandbox.sh), its
# CRDs applied (conversion webhook off: crd-without-webhook.py), then started with its log in
# $K8S_STATE/logs and its pid in $K8S_STATE/run, where stop-k8s.sh finds it. Idempotent. Called by
# ensure-k8s.sh when HARNESS_K8S_AGENT_SANDBOX=1, with the cluster up and ensure's lock held.
#
# It opens no port: no metrics, no health probes, no webhook server, no leader election (one
# replica). It talks to the apiserver as the user agent-sandbox-controller, with the ClusterRoles
# its release ships and nothing more (agent-sandbox-rbac.yaml).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/scripts/k8s
# shellcheck source=scripts/k8s/common.sh
source "$here/common.sh"
started=$(date +%s%N)
name=agent-sandbox-controller
kubeconfig=$K8S_STATE/$name.kubeconfig
kube() { "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" --request-timeout=20s "$@"; }
elapsed() { echo "$((($(date +%s%N) - started) / 1000000)) ms"; }

k8s_lock
if k8s_pid "$name" >/dev/null; then exit 0; fi

bash "$here/build-agent-sandbox.sh" "$K8S_AGENT_SANDBOX_VERSION" "$K8S_AGENT_SANDBOX_DIR"

# CRDs: server-side, as two of them are larger than client-side apply's annotation allows.
python3 "$here/crd-without-webhook.py" "$K8S_AGENT_SANDBOX_DIR"/crds/*.yaml |
  kube apply --server-side --force-conflicts --field-manager harness -f - >/dev/null
kube apply -f "$K8S_AGENT_SANDBOX_DIR/rbac.generated.yaml" -f "$K8S_AGENT_SANDBOX_DIR/extensions-rbac.generated.yaml" \
  -f "$here/agent-sandbox-rbac.yaml" >/dev/null
for crd in sandboxes.agents.x-k8s.io sandboxclaims.extensions.agents.x-k8s.io \
  sandboxtemplates.extensions.agents.x-k8s.io sandboxwarmpools.extensions.agents.x-k8s.io; do
  kube wait --for condition=Established "crd/$crd" --timeout=60s >/dev/null
done

# Its client certificate, signed by the cluster's CA, in a kubeconfig of its own.
pki=$K8S_STATE/pki
if [ ! -s "$kubeconfig" ]; then
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
  chmod 600 "$pki/$name.key"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$pki/$name.ext"
  openssl req -new -key "$pki/$name.key" -subj "/CN=$name" 2>/dev/null |
    openssl x509 -req -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 3650 \
      -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  KUBECONFIG=$kubeconfig.partial "$K8S_BIN/kubectl" config set-cluster harness-k8s \
    --server "https://127.0.0.1:$K8S_APISERVER_PORT" --certificate-authority "$pki/ca.crt" --embed-certs >/dev/null
  KUBECONFIG=$kubeconfig.partial "$K8S_BIN/kubectl" config set-credentials "$name" \
    --client-certificate "$pki/$name.crt" --client-key "$pki/$name.key" --embed-certs >/dev/null
  KUBECONFIG=$kubeconfig.partial "$K8S_BIN/kubectl" config set-context harness-k8s --cluster harness-k8s --user "$name" >/dev/null
  KUBECONFIG=$kubeconfig.partial "$K8S_BIN/kubectl" config use-context harness-k8s >/dev/null
  chmod 600 "$kubeconfig.partial"
  mv "$kubeconfig.partial" "$kubeconfig"
fi

log=$K8S_STATE/logs/$name.log
# 9<&-: it must not hold ensure's lock. Port 0 turns the metrics and probe servers off.
# `env -C /`, not a subshell: $! is the controller from its first exec on, and stop-k8s.sh (k8s_pid)
# knows it by its argv (a subshell had this script's argv until its exec: taken for an exit once).
setsid env -C / "$K8S_AGENT_SANDBOX_DIR/bin/$name" --kubeconfig "$kubeconfig" --extensions \
  --leader-elect=false --enable-webhook=false --metrics-bind-address=0 --health-probe-bind-address=0 \
  </dev/null >"$log" 2>&1 9<&- &
pid=$!
echo "$pid" >"$K8S_STATE/run/$name.pid"

# Up when the warm-pool and claim controllers start their workers (their caches are synced).
deadline=$(($(date +%s) + 60))
until [ "$(grep -c '"Starting workers".*"controller":"sandbox\(warmpool\|claim\)"' "$log")" -ge 2 ]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    k8s_log "$name exited; its log:"
    tail -n 20 "$log" >&2
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    k8s_log "$name did not start its controllers in 60 s; its log:"
    tail -n 20 "$log" >&2
    exit 1
  fi
  sleep 0.2
done
k8s_log "$name $K8S_AGENT_SANDBOX_VERSION running ($(elapsed))"
