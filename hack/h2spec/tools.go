//go:build tools

// Package tools pins h2spec, the HTTP/2 conformance suite that
// tests/webhook_h2spec_test.ts runs against the webhook server's HTTP/2 layer.
package tools

import (
	_ "github.com/summerwind/h2spec/cmd/h2spec"
)
