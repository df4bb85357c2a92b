#!/usr/bin/env bash
# Builds helm from the Go module pinned in this folder's go.mod and caches it
# outside the repository, so that tests render and lint charts/evictor/ with
# the real Helm. Prints the path of the executable.
#
# If HELM_BIN names an executable, that one is used and nothing is built.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../build_progress.sh
source "$here/../build_progress.sh"

if [[ -n "${HELM_BIN:-}" ]]; then
  if [[ -x "$HELM_BIN" ]]; then
    echo "$HELM_BIN"
    exit 0
  fi
  echo "HELM_BIN=$HELM_BIN is not an executable file; expected the path of a helm binary" >&2
  exit 1
fi

version="$(sed -n 's/^require helm.sh\/helm\/v4 \(v[0-9.]*\)$/\1/p' "$here/go.mod")"
# The cache key covers go.mod and go.sum: a changed pin builds anew.
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
out="${EVICTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evictor}/helm/${version}-${key}"

if [[ -x "$out/helm" ]]; then
  echo "$out/helm"
  exit 0
fi

# One build at a time: parallel test runs on a fresh machine wait for the
# first build instead of starting their own into the same folder.
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
with_elapsed "helm: waiting for another build into $out (lock $out.lock)" flock 9
if [[ -x "$out/helm" ]]; then
  echo "$out/helm"
  exit 0
fi

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "go not found on PATH: helm is built from its Go module (or set HELM_BIN)" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
echo "helm: downloading Go modules for helm ${version}" >&2
with_elapsed "helm: downloading Go modules" go mod download
start=$SECONDS
echo "helm: building helm ${version} (helm.sh/helm/v4/cmd/helm); the first build takes minutes, a line every ${EVICTOR_PROGRESS_SECONDS:-20} s" >&2
CGO_ENABLED=0 with_elapsed "helm: building" go build -trimpath -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=${version}" \
  -o "$out.tmp/helm" helm.sh/helm/v4/cmd/helm
echo "helm: built in $((SECONDS - start)) s" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out/helm"
