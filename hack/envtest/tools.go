//go:build tools

// Package tools pins the commands that the tests run against: a real
// kube-apiserver, etcd and kubectl, built from their Go modules.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
