#!/usr/bin/env bash
# Makes sure the Docker engine has gVisor registered as the runtime "runsc" the way harness needs it:
# installs Debian's runsc when missing, merges the runtime into /etc/docker/daemon.json (other keys
# kept), and reloads dockerd with SIGHUP (no restart, running containers untouched). "--network=none"
# is required: harness's containers have no network, and runsc registered without it refuses them with
# "cannot run with network enabled in root network namespace".
set -euo pipefail

config=${HARNESS_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}
registered() {
  docker info --format '{{json .Runtimes}}' 2>/dev/null | python3 -c '
import json, sys
runtime = json.load(sys.stdin).get("runsc") or {}
sys.exit(0 if "--network=none" in (runtime.get("runtimeArgs") or []) else 1)'
}

if registered; then
  echo "gVisor runtime: registered"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "gVisor (runsc) is not registered with Docker: see docs/engines.md, 'Stronger isolation with gVisor', for the daemon.json entry" >&2
  exit 1
fi
start=$(date +%s.%N)
if ! command -v runsc >/dev/null 2>&1; then
  echo "gVisor runtime: installing Debian's runsc"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq runsc >/dev/null
fi
mkdir -p "$(dirname "$config")"
python3 - "$config" "$(command -v runsc)" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
config = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        config = json.load(f)
config.setdefault("runtimes", {})["runsc"] = {"path": runsc, "runtimeArgs": ["--network=none"]}
tmp = path + ".harness-tmp"
with open(tmp, "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
os.replace(tmp, path)
PY
pid=$(cat /var/run/docker.pid 2>/dev/null || pidof dockerd || true)
if [ -z "$pid" ]; then
  echo "no running dockerd to reload: start it (scripts/ensure-docker.sh) and run this again" >&2
  exit 1
fi
kill -HUP "$pid"
for _ in $(seq 1 60); do
  if registered; then
    echo "gVisor runtime: registered in $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$start") s"
    exit 0
  fi
  sleep 0.5
done
echo "dockerd did not list the runsc runtime after a reload; check $config and dockerd's log" >&2
exit 1
