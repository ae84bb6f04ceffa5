package bench

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picketlock/picket/lease"
)

// Row is the result of one step: one workload with one number of clients.
type Row struct {
	Names   string        // the workload: Distinct, Fresh or Hot
	Clients int           // concurrent clients
	Elapsed time.Duration // from the step's start until its last client returned

	Grants int64 // grants received (each a new token, except a retried grant)
	Cycles int64 // grants released again (Distinct, Hot); 0 for Fresh
	Errors int64 // failed calls, not counting those the step's end cut short

	// FirstError is the first failure, to tell what Errors were.
	FirstError error

	GrantsPerSec float64 // Grants / Elapsed
	CyclesPerSec float64 // Cycles / Elapsed

	// Latency percentiles: of a grant (the Acquire call) for Distinct and
	// Fresh, of the hand-over (release sent → next grant received) for Hot.
	P50, P99, Max time.Duration

	// MinShare is the least served client's grants over the fair share
	// (Grants / Clients): 1 is perfectly fair, 0 means a client got
	// nothing.
	MinShare float64

	// Left counts the leases the step could not release afterwards (with
	// Config.Cleanup); they expire by themselves.
	Left int64
}

// rowJSON is a Row on the wire ("picket bench -json").
type rowJSON struct {
	Clients      int     `json:"clients"`
	Names        string  `json:"names"`
	GrantsPerSec float64 `json:"grants_per_sec"`
	CyclesPerSec float64 `json:"cycles_per_sec"`
	P50          float64 `json:"p50_ms"`
	P99          float64 `json:"p99_ms"`
	Errors       int64   `json:"errors"`
	Grants       int64   `json:"grants"`
	Elapsed      float64 `json:"elapsed_ms"`
	Max          float64 `json:"max_ms"`
	MinShare     float64 `json:"min_share"`
	Left         int64   `json:"left,omitempty"`
	FirstError   string  `json:"first_error,omitempty"`
}

// MarshalJSON renders r as {"clients", "names", "grants_per_sec",
// "cycles_per_sec", "p50_ms", "p99_ms", "errors", "grants", "elapsed_ms",
// "max_ms", "min_share", "first_error"?}, durations in milliseconds.
func (r Row) MarshalJSON() ([]byte, error) {
	j := rowJSON{
		Clients:      r.Clients,
		Names:        r.Names,
		GrantsPerSec: round(r.GrantsPerSec, 10),
		CyclesPerSec: round(r.CyclesPerSec, 10),
		P50:          ms(r.P50),
		P99:          ms(r.P99),
		Errors:       r.Errors,
		Grants:       r.Grants,
		Elapsed:      ms(r.Elapsed),
		Max:          ms(r.Max),
		MinShare:     round(r.MinShare, 1000),
		Left:         r.Left,
	}
	if r.FirstError != nil {
		j.FirstError = r.FirstError.Error()
	}
	return json.Marshal(j)
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1000) }

func round(x, unit float64) float64 {
	if unit <= 0 {
		return x
	}
	return float64(int64(x*unit+0.5)) / unit
}

// Run measures cfg.Store: for each workload of cfg.Workloads, for each
// client count of cfg.Clients, one step of cfg.Duration in which that many
// goroutines call the store as fast as it answers. It returns one Row per
// step, in that order.
//
// Every step is bounded: no operation starts after cfg.Duration or beyond
// cfg.MaxOps, and the operations still in flight are cancelled
// DefaultGrace after the end. A step's failures are counted in its Row, not
// returned.
//
// ctx bounds the whole run. Errors: one matching lease.ErrInvalid for a bad
// Config (nothing is run), or ctx's error, with the rows of the steps that
// finished before it ended.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	steps := len(s.workloads) * len(s.clients)
	var rows []Row
	n := 0
	for _, w := range s.workloads {
		for _, clients := range s.clients {
			n++
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			p := Progress{Step: n, Steps: steps, Names: w, Clients: clients}
			if s.progress != nil {
				p.Elapsed = time.Since(start)
				s.progress(p)
			}
			row := s.step(ctx, n, w, clients)
			if err := ctx.Err(); err != nil {
				return rows, err // the step was cut short: its row would mislead
			}
			rows = append(rows, row)
			if s.progress != nil {
				p.Elapsed, p.Row = time.Since(start), &row
				s.progress(p)
			}
		}
	}
	return rows, nil
}

// step runs one workload with clients goroutines and sums up what they saw.
func (s *settings) step(ctx context.Context, no int, w string, clients int) Row {
	start := time.Now()
	st := &stepState{
		s:     s,
		start: start,
		stop:  start.Add(s.duration),
		base:  s.prefix + "s" + itoa(no) + "/" + w,
	}
	var cancelHard context.CancelFunc
	st.hard, cancelHard = context.WithDeadline(ctx, st.stop.Add(s.grace))
	defer cancelHard()

	stats := make([]*clientStats, clients)
	var wg sync.WaitGroup
	for i := range clients {
		cs := new(clientStats)
		stats[i] = cs
		wg.Go(func() {
			switch w {
			case Distinct:
				st.distinct(i, cs)
			case Fresh:
				st.fresh(i, cs)
			case Hot:
				st.hot(cs)
			}
		})
	}
	wg.Wait()
	row := summarize(w, clients, time.Since(start), stats)
	if s.cleanup {
		row.Left = s.releaseLeft(ctx, st.base, clients, stats)
	}
	return row
}

// releaseLeft releases what the step's clients left held, clients calls at
// a time, and returns how many it could not release (those expire by
// themselves after the run's TTL).
//
// Most of it the clients remembered: every call runs until it is answered
// (a hot call's wait ends with the step, by its Wait: workload.go), unless
// the step's grace runs out. A call whose answer the grace cut off may
// still have been granted: a look under the step's prefix finds such
// leases, and the holder that has one gets it back (takeBack).
func (s *settings) releaseLeft(ctx context.Context, base string, clients int, stats []*clientStats) int64 {
	failed := s.releaseGrants(ctx, clients, stats)
	left, err := lease.ListAll(ctx, s.store, base)
	if err != nil {
		return failed + 1
	}
	for _, info := range left {
		if !s.takeBack(ctx, info.Name, stats) {
			failed++
		}
	}
	return failed
}

// takeBack releases the lease on name if one of the step's clients holds
// it (that holder's re-acquire returns its own grant), and reports whether
// it did.
func (s *settings) takeBack(ctx context.Context, name string, stats []*clientStats) bool {
	for _, cs := range stats {
		g, err := s.store.Acquire(ctx, lease.AcquireRequest{Name: name, Holder: cs.holder, Owner: DefaultOwner, TTL: s.ttl})
		if err == nil {
			return s.store.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}) == nil
		}
	}
	return false
}

// releaseGrants releases the grants the clients remembered and returns how
// many releases failed.
func (s *settings) releaseGrants(ctx context.Context, clients int, stats []*clientStats) int64 {
	work := make(chan lease.Grant)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for g := range work {
				if err := s.store.Release(ctx, lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil && !errors.Is(err, lease.ErrLost) {
					failed.Add(1)
				}
			}
		})
	}
	for _, cs := range stats {
		for _, g := range cs.left {
			work <- g
		}
		cs.left = nil
	}
	close(work)
	wg.Wait()
	return failed.Load()
}

// summarize adds up the clients' statistics into a Row.
func summarize(w string, clients int, elapsed time.Duration, stats []*clientStats) Row {
	row := Row{Names: w, Clients: clients, Elapsed: elapsed}
	var h Histogram
	least := int64(-1)
	for _, cs := range stats {
		h.Merge(&cs.hist)
		row.Grants += cs.grants
		row.Cycles += cs.cycles
		row.Errors += cs.errs
		if row.FirstError == nil {
			row.FirstError = cs.firstErr
		}
		if least < 0 || cs.grants < least {
			least = cs.grants
		}
	}
	if secs := elapsed.Seconds(); secs > 0 {
		row.GrantsPerSec = float64(row.Grants) / secs
		row.CyclesPerSec = float64(row.Cycles) / secs
	}
	row.P50, row.P99, row.Max = h.Quantile(0.50), h.Quantile(0.99), h.Max()
	if row.Grants > 0 {
		row.MinShare = float64(least) * float64(clients) / float64(row.Grants)
	}
	return row
}
