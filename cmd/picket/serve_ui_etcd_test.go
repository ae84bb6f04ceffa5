//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestServeUIEtcd: the same on "picket serve -etcd", in front of a real
// etcd member process (. .ci/etcd).
func TestServeUIEtcd(t *testing.T) {
	c := startEtcdCluster(t, 1)
	dir := t.TempDir()
	clientTok, adminTok := writeUITokens(t, dir)
	s := startServe(t, "-etcd", strings.Join(c.endpoints, ","), "-etcd-prefix", "ui-test",
		"-require-token-file", clientTok, "-admin-token-file", adminTok)
	uiChecks(t, s.url, "Live leases")
}
