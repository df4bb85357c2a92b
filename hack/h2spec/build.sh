#!/usr/bin/env bash
# Builds h2spec, the HTTP/2 conformance suite, from the Go module pinned in
# this folder's go.mod and caches it outside the repository, for
# tests/webhook_h2spec_test.ts. Prints the path of the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pkg=github.com/summerwind/h2spec/cmd/h2spec

version="$(sed -n 's/^\(require\)\{0,1\}[[:space:]]*github.com\/summerwind\/h2spec \(v[^ ]*\)$/\2/p' "$here/go.mod")"
# The cache key covers go.mod and go.sum: a changed pin builds anew.
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
out="${EVICTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evictor}/h2spec/${key}"

if [[ -x "$out/h2spec" ]]; then
  echo "$out/h2spec"
  exit 0
fi

# One build at a time: parallel test runs on a fresh machine wait for the
# first build instead of starting their own into the same folder.
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
if [[ -x "$out/h2spec" ]]; then
  echo "$out/h2spec"
  exit 0
fi

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "go not found on PATH: h2spec is built from its Go module (hack/h2spec/go.mod)" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
start=$SECONDS
echo "h2spec: building ${pkg} ${version}" >&2
go mod download >&2
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out.tmp/h2spec" "$pkg" >&2
echo "h2spec: built in $((SECONDS - start)) s" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out/h2spec"
