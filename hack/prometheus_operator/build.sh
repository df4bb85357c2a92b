#!/usr/bin/env bash
# Fetches the Prometheus operator's CustomResourceDefinitions (ServiceMonitor,
# PrometheusRule, ...) from its Go module, pinned and checksummed in this
# folder's go.mod and go.sum, through the Go module proxy into Go's module
# cache, and prints the folder that holds them. tests/monitoring_test.ts
# installs them into a real API server to validate manifests/monitoring/
# against the real schemas (strict field validation).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=github.com/prometheus-operator/prometheus-operator
version="$(sed -n "s|^require ${module} \(v[^ ]*\)$|\1|p" "$here/go.mod")"
[[ -n "$version" ]] || { echo "hack/prometheus_operator/go.mod: no 'require ${module} vX.Y.Z' line" >&2; exit 1; }

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null || { echo "go not found on PATH: the Prometheus operator's CRDs come from its Go module (hack/prometheus_operator/go.mod)" >&2; exit 1; }

cd "$here"
# go.sum pins the module's hash: a tampered download fails here.
dir="$(go mod download -json "${module}@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
crds="$dir/example/prometheus-operator-crd"
[[ -f "$crds/monitoring.coreos.com_servicemonitors.yaml" ]] || { echo "no ServiceMonitor CRD under $crds" >&2; exit 1; }
echo "$crds"
