module evictor.local/hack/prometheus_operator

go 1.26.7

// Only its CustomResourceDefinitions are used (example/prometheus-operator-crd
// of the module): tests/monitoring_test.ts validates manifests/monitoring
// against them on a real API server. Nothing is compiled.
require github.com/prometheus-operator/prometheus-operator v0.85.0
