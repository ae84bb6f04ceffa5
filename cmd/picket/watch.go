package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// runWatch is "picket watch NAME": the name's state now, then one line per
// change, until a signal (exit 0) or -count lines.
//
// A line is the time of the change as this process saw it, the name and
// the state: "held by OWNER token T until EXPIRES (REASON)" or "free after
// token T (REASON)"; with -json, the HTTP API's watch state, one object per
// line. Several changes between two reads (a slow reader, a server that
// restarted) come out as one line, with the last reason: no change is
// missed, some may be summed up.
func runWatch(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "watch")
	sf := storeFlags{existing: true}
	sf.register(fs)
	nameF := nameFlag(fs)
	jsonF := fs.Bool("json", false, "print JSON lines: the HTTP API's watch state")
	count := fs.Int("count", 0, "exit 0 after `N` lines (the first state included); 0: until a signal")
	name, _, err := leaseName(fs, args, nameF, false, false)
	if err != nil {
		return err
	}
	if *count < 0 {
		return usagef("watch: -count must not be negative")
	}
	if err := storekit.ValidateName(name); err != nil {
		return usagef("watch: %v", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return sf.with(fs, func(s store) error {
		w, ok := s.(lease.Watcher)
		if !ok {
			return fmt.Errorf("watch: this store cannot watch")
		}
		var st lease.State
		for n := 0; *count == 0 || n < *count; n++ {
			next, err := w.Watch(ctx, name, st)
			if err != nil {
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					return nil // a signal: done
				}
				return err
			}
			st = next
			if err := printState(e.stdout, st, *jsonF); err != nil {
				return err
			}
		}
		return nil
	})
}

// printState writes one line for st.
func printState(w io.Writer, st lease.State, asJSON bool) error {
	if asJSON {
		return wire.EncodeState(w, st)
	}
	_, err := fmt.Fprintln(w, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), st.String())
	return err
}
