package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/picketlock/picket/lease"
)

// runHealth asks a store whether it can grant: a server's /healthz, or an
// embedded file or an etcd cluster directly. It prints "ok" and exits 0, or
// exits 6 (unavailable) with the reason. A container's health check runs it
// (picket health -server 127.0.0.1:7070): images FROM scratch have no curl.
func runHealth(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "health")
	sf := storeFlags{existing: true}
	sf.register(fs)
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long (unavailable)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *timeout <= 0 {
		return usagef("health: -timeout must be positive")
	}
	// A health check must not create the default picket.db where it runs.
	dbSet := false
	fs.Visit(func(fl *flag.Flag) { dbSet = dbSet || fl.Name == "db" })
	if !dbSet && sf.server == "" && !sf.etcd.set() {
		return usagef("health: name the store: -server URL (or -db F, -etcd URLs)")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return sf.with(fs, func(s store) error {
		hc, ok := s.(lease.HealthChecker)
		if !ok {
			return fmt.Errorf("health: this store cannot say whether it is healthy")
		}
		if err := hc.Health(ctx); err != nil {
			return err
		}
		_, err := fmt.Fprintln(e.stdout, "ok")
		return err
	})
}
