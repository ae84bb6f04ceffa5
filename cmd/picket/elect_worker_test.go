//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// The election tests' candidates are this test binary too: the child
// "elect-worker" (internal/childtest) runs electWorkerMain instead of the
// tests, configured by PICKET_ELECT_CONFIG.
const electConfigEnv = "PICKET_ELECT_CONFIG"

func init() {
	childtest.Register("elect-worker", func() int { return electWorkerMain(os.Stdin, os.Stdout, os.Stderr) })
}

// electConfig is what a candidate is told, as JSON in PICKET_ELECT_CONFIG.
type electConfig struct {
	ID     int           `json:"id"`
	Store  string        `json:"store"` // "db", "server" or "etcd"
	Addr   string        `json:"addr"`  // the file, the server's URL, or the etcd endpoints (comma-separated)
	Prefix string        `json:"prefix"`
	Name   string        `json:"name"` // the election
	Key    string        `json:"key"`  // the fenced key the leader writes
	TTL    time.Duration `json:"ttl"`
	MaxRun time.Duration `json:"max_run"` // the candidate stops by itself after this long
}

// Kinds of election events, one JSON line each on a candidate's stdout.
const (
	elNewLeader = "new-leader" // OnNewLeader: Token, Value
	elStarted   = "started"    // OnStartedLeading: Token
	elWrote     = "wrote"      // the leader's first write with its term: Token, Err ("" when accepted)
	elCtxDone   = "ctx-done"   // the leader's context ended: Token, Err (its cause)
	elStopped   = "stopped"    // OnStoppedLeading: Token, Err (the cause), Lost
	elLate      = "late-write" // a write with the last term's token, on the test's order: Token, Err, Stale
	elExit      = "exit"       // Run returned: Err
)

type electEvent struct {
	Worker int    `json:"w"`
	Kind   string `json:"ev"`
	Token  uint64 `json:"tok,omitempty"`
	Value  string `json:"value,omitempty"`
	Err    string `json:"err,omitempty"`
	Lost   bool   `json:"lost,omitempty"`
	Stale  bool   `json:"stale,omitempty"`
}

// fencedKV is the fenced write every store of the test has.
type fencedKV interface {
	lease.Store
	PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error
}

// openElectStore opens the store cfg names.
func openElectStore(cfg electConfig) (fencedKV, func() error, error) {
	switch cfg.Store {
	case "db":
		s, err := sqlite.Open(cfg.Addr)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	case "server":
		c, err := httpapi.NewClient(cfg.Addr)
		return c, func() error { return nil }, err
	case "etcd":
		s, err := etcd.Open(strings.Split(cfg.Addr, ","), etcd.WithPrefix(cfg.Prefix))
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q", cfg.Store)
}

// electWorkerMain is a candidate: it runs Election.Run and reports every
// callback. As leader it writes once to the fenced key with its term, then
// waits for its context to end. On a line "write" on stdin it writes with
// the last term it led, whether it still leads or not: the late write of a
// leader paused between its check and its write. When stdin closes it stops
// (Run resigns) and exits.
func electWorkerMain(stdin io.Reader, stdout, stderr io.Writer) int {
	var cfg electConfig
	if err := json.Unmarshal([]byte(os.Getenv(electConfigEnv)), &cfg); err != nil {
		fmt.Fprintf(stderr, "elect worker: %s: %v\n", electConfigEnv, err)
		return 2
	}
	st, closeStore, err := openElectStore(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "elect worker: %v\n", err)
		return 2
	}
	defer closeStore()
	w := &electWorker{cfg: cfg, kv: st, out: json.NewEncoder(stdout)}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxRun)
	defer cancel()
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			if sc.Text() == "write" {
				w.lateWrite()
			}
		}
		cancel() // the test closed stdin: stop
	}()

	m := mustManager(st, lease.WithBackoff(5*time.Millisecond, 100*time.Millisecond))
	e := lease.NewElection(m, cfg.Name, cfg.TTL)
	err = e.Run(ctx, fmt.Sprintf("candidate-%d", cfg.ID), lease.Callbacks{
		OnStartedLeading: w.lead,
		OnStoppedLeading: func(cause error) {
			w.emit(electEvent{Kind: elStopped, Token: uint64(w.term()), Err: errText(cause),
				Lost: errors.Is(cause, lease.ErrLost)})
		},
		OnNewLeader: func(l lease.Leader) {
			w.emit(electEvent{Kind: elNewLeader, Token: uint64(l.Token), Value: l.Value})
		},
	})
	w.emit(electEvent{Kind: elExit, Err: errText(err)})
	if w.failed != nil {
		fmt.Fprintf(stderr, "elect worker: writing events: %v\n", w.failed)
		return 1
	}
	return 0
}

type electWorker struct {
	cfg electConfig
	kv  fencedKV

	mu     sync.Mutex
	last   *lease.Term // the last term led
	out    *json.Encoder
	failed error
}

// lead is OnStartedLeading: one write with the term, then wait for the end.
func (w *electWorker) lead(ctx context.Context, t *lease.Term) {
	w.mu.Lock()
	w.last = t
	w.mu.Unlock()
	w.emit(electEvent{Kind: elStarted, Token: uint64(t.Token()), Value: t.Value()})
	err := w.put(ctx, t)
	w.emit(electEvent{Kind: elWrote, Token: uint64(t.Token()), Err: errText(err)})
	<-ctx.Done()
	w.emit(electEvent{Kind: elCtxDone, Token: uint64(t.Token()), Err: errText(context.Cause(ctx))})
}

// lateWrite writes with the last term led, without looking at it first.
func (w *electWorker) lateWrite() {
	w.mu.Lock()
	t := w.last
	w.mu.Unlock()
	if t == nil {
		w.emit(electEvent{Kind: elLate, Err: "never led"})
		return
	}
	err := w.put(context.Background(), t)
	ev := electEvent{Kind: elLate, Token: uint64(t.Token()), Err: errText(err), Stale: errors.Is(err, token.ErrStale)}
	t.Fenced(err)
	w.emit(ev)
}

// put writes to the fenced key with t's token, within ten seconds (the
// write must go out even after the term's context ended).
func (w *electWorker) put(ctx context.Context, t *lease.Term) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return w.kv.PutFenced(pctx, w.cfg.Key, fmt.Appendf(nil, "candidate %d term %d", w.cfg.ID, t.Token()), t.Token())
}

func (w *electWorker) term() token.Token {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		return 0
	}
	return w.last.Token()
}

func (w *electWorker) emit(ev electEvent) {
	ev.Worker = w.cfg.ID
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.out.Encode(ev); err != nil && w.failed == nil {
		w.failed = err
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
