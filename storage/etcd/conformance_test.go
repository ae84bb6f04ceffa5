package etcd_test

import (
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/leasetest"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// TestConformance runs the lease.Store conformance suite, its expiry rules
// on real time, against etcd in this process: one member, then a cluster of
// three on loopback (every store talks to all three).
func TestConformance(t *testing.T) {
	for _, members := range []int{1, 3} {
		t.Run(map[int]string{1: "OneMember", 3: "ThreeMembers"}[members], func(t *testing.T) {
			c := etcdtest.Start(t, members)
			leasetest.Run(t, leasetest.Harness{
				Open: func(t testing.TB, cfg leasetest.Config) lease.Store {
					return mustOpen(t, c, etcd.WithLockDelay(cfg.LockDelay))
				},
				RealTime: &leasetest.RealTime{TTL: etcdtest.MinTTL, Slack: time.Second},
			})
		})
	}
}
