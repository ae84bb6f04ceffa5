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
// three on loopback (every store talks to all three; not under -race, which
// slows three members in one process past the suite's 300 ms leases).
func TestConformance(t *testing.T) {
	for _, members := range []int{1, 3} {
		t.Run(map[int]string{1: "OneMember", 3: "ThreeMembers"}[members], func(t *testing.T) {
			if members > 1 && raceEnabled {
				// Three race-instrumented members on a small machine renew
				// too slowly for the suite's 300 ms KeepAlive lease.
				t.Skip("three members under -race: run without -race")
			}
			c := etcdtest.Start(t, members)
			leasetest.Run(t, leasetest.Harness{
				Open: func(t testing.TB, cfg leasetest.Config) lease.Store {
					return mustOpen(t, c, etcd.WithLockDelay(cfg.LockDelay))
				},
				RealTime:   &leasetest.RealTime{TTL: etcdtest.MinTTL, Slack: time.Second},
				LoseAnswer: loseAnswers(c), // unknown_test.go
			})
		})
	}
}
