#!/usr/bin/env bash
# Builds kubernetes-sigs/agent-sandbox's controller (Sandbox, and the extensions: SandboxTemplate,
# SandboxWarmPool, SandboxClaim) of one version from the Go module proxy into DEST/bin, and copies
# its CRDs into DEST/crds. Nothing is done when both are there already.
#
# The proxy serves the module at exact versions only, and the checksum database does not know it
# (its lookup answers 404), so Go's own verification cannot run: GONOSUMDB skips it for this one
# module, and the module's hash is checked here against the one pinned below instead.
# Usage: build-agent-sandbox.sh vX.Y.Z DEST
set -euo pipefail
usage="usage: build-agent-sandbox.sh vX.Y.Z DEST"
version=${1:?$usage}
dest=${2:?$usage}
module=sigs.k8s.io/agent-sandbox
# The go.sum hash (h1:) of each version this script may build; another version must be added here.
case "$version" in
  v0.5.2) pinned=h1:ghR6uyWAfC6fI1rZZPse6Y4phr6Sfx7ywzv9LAWQC54= ;;
  *)
    echo "build-agent-sandbox: no pinned hash for $module@$version: add it to this script" >&2
    exit 2
    ;;
esac
if [ -x "$dest/bin/agent-sandbox-controller" ] && [ -n "$(ls "$dest/crds" 2>/dev/null)" ]; then exit 0; fi

work=$(mktemp -d /tmp/harness-agent-sandbox-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GONOSUMDB=$module
go mod download -json "$module@$version" >module.json
read -r sum dir < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m.get("Sum", ""), m.get("Dir", ""))' module.json)
if [ "$sum" != "$pinned" ]; then
  echo "build-agent-sandbox: $module@$version has hash '$sum', pinned $pinned: refusing to build" >&2
  exit 1
fi

# A scratch module that requires it: its own go.mod (no replaces) then picks every dependency.
printf 'module harness.local/agent-sandbox-build\n\ngo 1.26.0\n' >go.mod
printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/agent-sandbox-controller"\n' "$module" >tools.go
go mod edit -require="$module@$version"
go mod tidy

start=$(date +%s)
mkdir -p "$dest/bin" "$dest/crds"
pkg=$module/internal/version
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X $pkg.gitVersion=$version -X $pkg.buildDate=1970-01-01T00:00:00Z" \
  -o "$dest/bin/.agent-sandbox-controller.partial" "$module/cmd/agent-sandbox-controller"
# The CRDs and the controller's RBAC rules, as released with this version (read-only in Go's cache).
install -m 644 "$dir"/k8s/crds/*.yaml "$dest/crds/"
install -m 644 "$dir/k8s/rbac.generated.yaml" "$dir/k8s/extensions-rbac.generated.yaml" "$dest/"
mv "$dest/bin/.agent-sandbox-controller.partial" "$dest/bin/agent-sandbox-controller"
echo "build-agent-sandbox: agent-sandbox-controller $version built in $(($(date +%s) - start)) s" >&2
