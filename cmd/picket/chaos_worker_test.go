//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The chaos test's workers are this test binary too: the child
// "chaos-worker" (internal/childtest) runs chaosWorkerMain instead of the
// tests, configured by PICKET_CHAOS_CONFIG.
const chaosConfigEnv = "PICKET_CHAOS_CONFIG"

func init() {
	childtest.Register("chaos-worker", func() int { return chaosWorkerMain(os.Stdin, os.Stdout, os.Stderr) })
}

// workerConfig is what a worker is told, as JSON in PICKET_CHAOS_CONFIG.
type workerConfig struct {
	ID     int           `json:"id"`
	Leases string        `json:"leases"` // the picket server's URL
	KV     string        `json:"kv"`     // where the fenced writes go: the same server, or the control's unfenced one
	Name   string        `json:"name"`   // the lease
	Key    string        `json:"key"`    // the fenced key
	TTL    time.Duration `json:"ttl"`
	Writes int           `json:"writes"`  // writes per lease
	Gap    time.Duration `json:"gap"`     // pause between two writes
	MaxRun time.Duration `json:"max_run"` // the worker stops by itself after this long
}

// Kinds of chaos events.
const (
	evGrant        = "grant"         // Manager.Acquire returned a lease: Token; Invoked is when the call began
	evAcquireError = "acquire-error" // Manager.Acquire gave up (its 5 s bound, or the run ended)
	evPutInvoke    = "put-invoke"    // a fenced write (Token, Seq) is about to be sent
	evPutAck       = "put-ack"       // it was acknowledged
	evPutRejected  = "put-rejected"  // it was refused as stale (Highest); the worker stops writing for the lease
	evPutError     = "put-error"     // it failed otherwise: outcome unknown
	evReleased     = "released"      // the worker released (or tried to release) the lease
)

// chaosEvent is one line of a worker's output. At (and Invoked) are read
// from CLOCK_BOOTTIME, which every process on the host shares, so the
// events of different workers and the test's own marks can be ordered.
type chaosEvent struct {
	Worker  int    `json:"w"`
	Kind    string `json:"ev"`
	Token   uint64 `json:"tok,omitempty"`
	Seq     int    `json:"seq,omitempty"`
	Highest uint64 `json:"highest,omitempty"`
	At      int64  `json:"t"`
	Invoked int64  `json:"inv,omitempty"`
	Err     string `json:"err,omitempty"`
}

// sharedNow reads CLOCK_BOOTTIME in nanoseconds: one clock for every
// process on the host (time.Now's monotonic reading is per process).
func sharedNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_BOOTTIME): %v", err))
	}
	return ts.Nano()
}

// chaosWorkerMain is a worker: it acquires the lease, writes to the fenced
// key with its token several times, releases, and again, until stdin closes
// or MaxRun passes. It writes one JSON event per line to stdout.
//
// On purpose it never checks its lease before a write: a pause can fall
// between such a check and the write, which is the gap fencing closes, and
// the test needs writes that land late. It does stop at the first stale
// rejection (Lease.Fenced) and never retries that write.
func chaosWorkerMain(stdin io.Reader, stdout, stderr io.Writer) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(os.Getenv(chaosConfigEnv)), &cfg); err != nil {
		fmt.Fprintf(stderr, "chaos worker: %s: %v\n", chaosConfigEnv, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxRun)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel() // the test closed stdin: stop
	}()

	leases, err := httpapi.NewClient(cfg.Leases)
	if err != nil {
		fmt.Fprintf(stderr, "chaos worker: %v\n", err)
		return 2
	}
	kv, err := httpapi.NewClient(cfg.KV)
	if err != nil {
		fmt.Fprintf(stderr, "chaos worker: %v\n", err)
		return 2
	}
	w := &chaosWorker{cfg: cfg, kv: kv, out: json.NewEncoder(stdout)}
	m := mustManager(leases,
		lease.WithOwner(fmt.Sprintf("chaos-worker-%d", cfg.ID)),
		lease.WithBackoff(5*time.Millisecond, 100*time.Millisecond))
	for ctx.Err() == nil {
		invoked := sharedNow()
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := m.Acquire(actx, cfg.Name, cfg.TTL)
		acancel()
		if err != nil {
			w.emit(chaosEvent{Kind: evAcquireError, Invoked: invoked, Err: err.Error()})
			time.Sleep(10 * time.Millisecond) // never spin on an error that comes back at once
			continue
		}
		w.emit(chaosEvent{Kind: evGrant, Token: uint64(l.Token()), Invoked: invoked})
		l.KeepAlive()
		w.hold(ctx, l)
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		err = l.Release(rctx)
		rcancel()
		ev := chaosEvent{Kind: evReleased, Token: uint64(l.Token())}
		if err != nil {
			ev.Err = err.Error()
		}
		w.emit(ev)
	}
	if w.failed != nil {
		fmt.Fprintf(stderr, "chaos worker: writing events: %v\n", w.failed)
		return 1
	}
	return 0
}

type chaosWorker struct {
	cfg    workerConfig
	kv     *httpapi.Client
	mu     sync.Mutex
	out    *json.Encoder
	failed error
}

// hold writes cfg.Writes values with the lease's token, stopping at the
// first stale rejection.
func (w *chaosWorker) hold(ctx context.Context, l *lease.Lease) {
	tok := l.Token()
	for seq := 1; seq <= w.cfg.Writes && ctx.Err() == nil; seq++ {
		value := fmt.Appendf(nil, "worker %d token %d write %d", w.cfg.ID, tok, seq)
		w.emit(chaosEvent{Kind: evPutInvoke, Token: uint64(tok), Seq: seq})
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := w.kv.PutFenced(pctx, w.cfg.Key, value, tok) // not l.Context(): the late write must go out
		cancel()
		var stale *token.StaleError
		switch {
		case err == nil:
			w.emit(chaosEvent{Kind: evPutAck, Token: uint64(tok), Seq: seq})
		case l.Fenced(err):
			ev := chaosEvent{Kind: evPutRejected, Token: uint64(tok), Seq: seq, Err: err.Error()}
			if errors.As(err, &stale) {
				ev.Highest = uint64(stale.Highest)
			}
			w.emit(ev)
			return
		default:
			w.emit(chaosEvent{Kind: evPutError, Token: uint64(tok), Seq: seq, Err: err.Error()})
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.cfg.Gap):
		}
	}
}

// emit stamps ev with the worker and the shared clock and writes it as one
// line.
func (w *chaosWorker) emit(ev chaosEvent) {
	ev.Worker, ev.At = w.cfg.ID, sharedNow()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.out.Encode(ev); err != nil && w.failed == nil {
		w.failed = err
	}
}
