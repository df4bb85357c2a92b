#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from the Go modules pinned in this
# folder's go.mod and caches them outside the repository, so that the tests
# run against a real API server. Prints the folder that holds the binaries.
#
# If KUBEBUILDER_ASSETS names a folder that already has all three (the
# envtest convention), that folder is used and nothing is built.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../build_progress.sh
source "$here/../build_progress.sh"
binaries=(kube-apiserver etcd kubectl)

has_all() {
  local dir="$1" b
  for b in "${binaries[@]}"; do [[ -x "$dir/$b" ]] || return 1; done
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if has_all "$KUBEBUILDER_ASSETS"; then
    echo "$KUBEBUILDER_ASSETS"
    exit 0
  fi
  echo "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks one of: ${binaries[*]}; expected a folder with all three executables" >&2
  exit 1
fi

version="$(sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$here/go.mod")"
# The cache key covers go.mod and go.sum: a changed pin builds anew.
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
out="${EVICTOR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evictor}/envtest/${version}-${key}"

if has_all "$out"; then
  echo "$out"
  exit 0
fi

# One build at a time: parallel test runs on a fresh machine wait for the
# first build instead of starting their own into the same folder.
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
with_elapsed "envtest: waiting for another build into $out (lock $out.lock)" flock 9
if has_all "$out"; then
  echo "$out"
  exit 0
fi

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "go not found on PATH: the envtest binaries are built from Go modules (or set KUBEBUILDER_ASSETS)" >&2; exit 1; }
mkdir -p "$out.tmp"
cd "$here"
echo "envtest: downloading Go modules for kubernetes ${version} into $(go env GOMODCACHE)" >&2
with_elapsed "envtest: downloading Go modules" go mod download
declare -A pkg=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)
for b in "${binaries[@]}"; do
  start=$SECONDS
  echo "envtest: building $b (${pkg[$b]}); the first build takes minutes (kube-apiserver up to 15 on 2 cores), a line every ${EVICTOR_PROGRESS_SECONDS:-20} s" >&2
  CGO_ENABLED=0 with_elapsed "envtest: building $b" go build -trimpath -ldflags="-s -w" -o "$out.tmp/$b" "${pkg[$b]}"
  echo "envtest: built $b in $((SECONDS - start)) s" >&2
done
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
