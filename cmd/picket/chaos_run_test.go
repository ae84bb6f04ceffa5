//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
)

// chaosRun is one chaos run: the worker processes, what they logged, and the
// chaos loop's marks.
type chaosRun struct {
	t       *testing.T
	plan    chaosPlan
	rng     *rand.Rand
	workers []*chaosProc

	// For the fenced run: the servers started so far (the last one is
	// live), and how to start the next one.
	servers []*server
	restart func() *server

	mu        sync.Mutex
	events    []chaosEvent
	lastGrant int // the worker that logged the latest grant
	nRejected int

	marks []restartMark
	// pauseUnit scales the pauses (0.5–3 units); zero means chaosTTL. A
	// store that grants longer than asked (etcd: whole seconds) needs
	// pauses past what it grants.
	pauseUnit time.Duration
	pauses    int
	paused    time.Duration
	elapsed   time.Duration
}

// chaosProc is one worker process.
type chaosProc struct {
	id     int
	proc   *childtest.Proc
	stderr *syncBuffer

	mu      sync.Mutex
	stopped bool // SIGSTOPped and not yet continued
}

// newChaosRun starts the workers: leases from leasesURL, writes to kvURL.
func newChaosRun(t *testing.T, plan chaosPlan, leasesURL, kvURL string) *chaosRun {
	t.Helper()
	seed := chaosSeed(t)
	r := &chaosRun{t: t, plan: plan, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), lastGrant: -1}
	for id := range plan.workers {
		cfg := workerConfig{
			ID: id, Leases: leasesURL, KV: kvURL, Name: chaosLease, Key: chaosKey, TTL: chaosTTL,
			Writes: 6, Gap: 30 * time.Millisecond, MaxRun: plan.limit + time.Minute,
		}
		r.workers = append(r.workers, r.startWorker(cfg))
	}
	return r
}

func (r *chaosRun) startWorker(cfg workerConfig) *chaosProc {
	t := r.t
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &chaosProc{id: cfg.ID, stderr: &syncBuffer{}}
	// A failed test leaves no worker behind, stopped or not: childtest's
	// cleanup continues and kills it.
	p.proc = childtest.Start(t, nil, "chaos-worker", childtest.Options{
		Env:    []string{chaosConfigEnv + "=" + string(b)},
		Stderr: p.stderr,
		OnLine: func(line string) {
			var ev chaosEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				p.stderr.WriteString("unreadable event: " + line + "\n")
				return
			}
			r.record(ev)
		},
	})
	return p
}

func (r *chaosRun) record(ev chaosEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	switch ev.Kind {
	case evGrant:
		r.lastGrant = ev.Worker
	case evPutRejected:
		r.nRejected++
	}
}

// snapshot returns the events logged so far.
func (r *chaosRun) snapshot() []chaosEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chaosEvent(nil), r.events...)
}

func (r *chaosRun) rejected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nRejected
}

func (r *chaosRun) holder() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastGrant
}

// run is the chaos loop: every 150–400 ms it pauses a worker — two times in
// three the one that logged the latest grant, who probably holds the lease,
// else any — for 0.5–3 TTLs; and it restarts the server plan.restarts times,
// spread over plan.base. It runs for plan.base, and on until plan.done says
// enough or plan.limit passes. Then it continues every worker, closes their
// stdin and waits for them to finish.
func (r *chaosRun) run() {
	t, plan := r.t, r.plan
	start := time.Now()
	var restartAt []time.Duration
	for i := range plan.restarts {
		slot := plan.base / time.Duration(plan.restarts+1)
		restartAt = append(restartAt, slot*time.Duration(i+1)+time.Duration(r.rng.Int64N(int64(slot/2)))-slot/4)
	}
	var timers sync.WaitGroup
	for {
		elapsed := time.Since(start)
		if elapsed >= plan.limit || elapsed >= plan.base && (plan.done == nil || plan.done(r)) {
			break
		}
		if len(restartAt) > 0 && elapsed >= restartAt[0] {
			restartAt = restartAt[1:]
			r.restartServer()
			continue
		}
		time.Sleep(150*time.Millisecond + time.Duration(r.rng.Int64N(int64(250*time.Millisecond))))
		victim := r.workers[r.rng.IntN(len(r.workers))]
		if h := r.holder(); h >= 0 && r.rng.IntN(3) < 2 {
			victim = r.workers[h]
		}
		unit := chaosTTL
		if r.pauseUnit > 0 {
			unit = r.pauseUnit
		}
		pause := unit/2 + time.Duration(r.rng.Int64N(int64(unit*5/2)))
		if victim.pause(pause, &timers) {
			r.pauses++
			r.paused += pause
		}
	}
	r.elapsed = time.Since(start)
	timers.Wait()

	for _, w := range r.workers {
		_ = w.proc.Cont()
		w.proc.CloseStdin()
	}
	for _, w := range r.workers {
		if err := w.proc.Wait(30 * time.Second); errors.Is(err, childtest.ErrTimeout) {
			t.Errorf("worker %d did not stop within 30s after its stdin closed:\n%s", w.id, w.stderr)
		} else if code := w.proc.Cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("worker %d exited %d:\n%s", w.id, code, w.stderr)
		}
	}
}

// pause stops the worker for d and continues it in the background (timers
// tracks that). A worker already stopped is left alone.
func (p *chaosProc) pause(d time.Duration, timers *sync.WaitGroup) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.proc.Stop() != nil {
		return false
	}
	p.stopped = true
	timers.Add(1)
	time.AfterFunc(d, func() {
		defer timers.Done()
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = p.proc.Cont()
		p.stopped = false
	})
	return true
}

// restartServer kills the live server with SIGKILL and starts a new one on
// the same file and address, marking both moments on the shared clock.
func (r *chaosRun) restartServer() {
	old := r.servers[len(r.servers)-1]
	old.kill9(r.t)
	dead := sharedNow()
	r.servers = append(r.servers, r.restart())
	r.marks = append(r.marks, restartMark{Dead: dead, Up: sharedNow()})
}

// history builds the run's history, or fails the test.
func (r *chaosRun) history() history {
	r.t.Helper()
	h, err := buildHistory(r.snapshot(), r.marks)
	if err != nil {
		r.t.Fatalf("the workers' logs: %v", err)
	}
	return h
}
