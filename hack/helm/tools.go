//go:build tools

// Package tools pins the Helm that tests render and lint the chart with
// (charts/evictor/), built from its Go module.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
