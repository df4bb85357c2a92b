//go:build tools

// Package tools pins promtool, which tests/monitoring_test.ts runs to check
// and unit-test the alerting rules, built from the Prometheus Go module.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
