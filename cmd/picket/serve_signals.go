package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// servingSignals are serve's signals, caught in one place (serveSignals).
type servingSignals struct {
	hurry  <-chan struct{} // closed at the second SIGINT or SIGTERM
	reload <-chan struct{} // a SIGHUP
	stop   func()          // stop catching; call once serve has returned
}

// serveSignals catches SIGINT, SIGTERM and SIGHUP for serve. The first
// SIGINT or SIGTERM cancels the returned context: serve stops cleanly
// (exit 0). Later ones must not kill the process half-way through that
// stop (the store's close checkpoints and leaves one file): a terminal's
// Ctrl-C reaches both "go run" and picket, and go run relays it, so picket
// gets two. They close hurry instead, which cuts the graceful wait short:
// connections are closed at once, and the store still closes cleanly. A
// SIGHUP is passed on to reload (dropped if one is already pending).
func serveSignals(ctx context.Context, logger log.Logger) (context.Context, servingSignals) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	hurry, reload, quit := make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		stopping, hurried := false, false
		for {
			var sig os.Signal
			select {
			case sig = <-sigs:
			case <-quit:
				return
			}
			switch {
			case sig == syscall.SIGHUP:
				select {
				case reload <- struct{}{}:
				default:
				}
			case !stopping:
				stopping = true
				level.Info(logger).Log("msg", "stopping", "signal", sig)
				cancel(fmt.Errorf("received signal %v", sig))
			case !hurried:
				hurried = true
				close(hurry)
			}
		}
	}()
	return ctx, servingSignals{hurry: hurry, reload: reload, stop: func() {
		signal.Stop(sigs) // no delivery after it returns
		close(quit)
		wg.Wait()
		cancel(nil)
	}}
}
