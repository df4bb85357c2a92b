#!/usr/bin/env bash
# Builds promtool (tests/monitoring_test.ts checks and unit-tests the alerting
# rules with it) from the Prometheus Go module pinned in this folder's go.mod
# and caches it outside the repository, as hack/envtest/build.sh does for the
# API server. Prints the path of the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../build_progress.sh
source "$here/../build_progress.sh"
pkg=github.com/prometheus/prometheus/cmd/promtool

version="$(sed -n 's/^require github.com\/prometheus\/prometheus \(v[^ ]*\)$/\1/p' "$here/go.mod")"
[[ -n "$version" ]] || { echo "hack/promtool/go.mod: no 'require github.com/prometheus/prometheus vX.Y.Z' line" >&2; exit 1; }
# The cache key covers go.mod and go.sum: a changed pin builds anew.
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
out="${EVICTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evictor}/promtool/${version}-${key}"

if [[ -x "$out/promtool" ]]; then
  echo "$out/promtool"
  exit 0
fi

# One build at a time: parallel test runs on a fresh machine wait for the
# first build instead of starting their own into the same folder.
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
with_elapsed "promtool: waiting for another build into $out (lock $out.lock)" flock 9
if [[ -x "$out/promtool" ]]; then
  echo "$out/promtool"
  exit 0
fi

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "go not found on PATH: promtool is built from its Go module (hack/promtool/go.mod)" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
start=$SECONDS
echo "promtool: building ${pkg} ${version}; the first build takes minutes, a line every ${EVICTOR_PROGRESS_SECONDS:-20} s" >&2
# remove_all_sd leaves out the service-discovery plugins that promtool does
# not import itself (rule checks and rule unit tests use none): 1,117 packages
# to compile instead of 1,364.
CGO_ENABLED=0 with_elapsed "promtool: building" go build -tags remove_all_sd -trimpath \
  -ldflags="-s -w -X github.com/prometheus/common/version.Version=${version}" -o "$out.tmp/promtool" "$pkg"
echo "promtool: built in $((SECONDS - start)) s" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out/promtool"
