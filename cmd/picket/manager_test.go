package main

import "github.com/picketlock/picket/lease"

// mustManager returns a Manager over st with options the test code fixes;
// an error from NewManager (a nil store, an option out of range) is a bug
// of the test, in a test or in a child process alike, so it panics.
func mustManager(st lease.Store, opts ...lease.Option) *lease.Manager {
	m, err := lease.NewManager(st, opts...)
	if err != nil {
		panic(err)
	}
	return m
}
