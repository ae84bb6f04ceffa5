//go:build race

package etcd_test

// raceEnabled: the race detector slows the in-process cluster several times.
const raceEnabled = true
