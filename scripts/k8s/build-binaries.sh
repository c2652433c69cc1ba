#!/usr/bin/env bash
# Builds Kubernetes server binaries of one version from the Go module proxy into DEST (those missing
# there). k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces every k8s.io staging module
# with a directory of its own repository. So a scratch module requires it and replaces each staging
# module with the published v0.MINOR.PATCH of the same release.
# Usage: build-binaries.sh vX.Y.Z DEST BINARY... (kube-apiserver, kubelet, kube-scheduler, ...)
set -euo pipefail
usage="usage: build-binaries.sh vX.Y.Z DEST BINARY..."
version=${1:?$usage}
dest=${2:?$usage}
shift 2
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
staging_version=v0.${version#v1.}
minor=${version#v1.}
minor=${minor%%.*}

missing=()
for binary in "$@"; do
  [ -x "$dest/$binary" ] || missing+=("$binary")
done
[ ${#missing[@]} -gt 0 ] || exit 0

work=$(mktemp -d /tmp/harness-k8s-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

printf 'module harness.local/k8s-build\n\ngo 1.24\n' >go.mod
{
  printf '//go:build tools\n\npackage tools\n\nimport (\n'
  for binary in "${missing[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$binary"; done
  printf ')\n'
} >tools.go

# The staging modules are the ones k8s.io/kubernetes's own go.mod points at ./staging/src/.
go mod download -json "k8s.io/kubernetes@$version" >kubernetes.json
gomod=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["GoMod"])' kubernetes.json)
mapfile -t staging < <(sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#\1#p' "$gomod")
[ "${#staging[@]}" -gt 10 ] || { echo "build-binaries: found no staging modules in $gomod" >&2; exit 1; }
go mod edit -require="k8s.io/kubernetes@$version"
for module in "${staging[@]}"; do
  go mod edit -replace="$module=$module@$staging_version"
done
go mod tidy
go mod download

# What `kubectl version` and the apiserver's /version report; the upstream build sets the same.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

mkdir -p "$dest"
for binary in "${missing[@]}"; do
  start=$(date +%s)
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$dest/.$binary.partial" "k8s.io/kubernetes/cmd/$binary"
  mv "$dest/.$binary.partial" "$dest/$binary"
  echo "build-binaries: $binary built in $(($(date +%s) - start)) s" >&2
done
