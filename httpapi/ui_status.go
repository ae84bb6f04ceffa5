package httpapi

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/picketlock/picket/lease"
)

// Bounds of what the status page reads and shows.
const (
	uiMaxLeases  = 500 // leases shown, the first by name
	uiMaxQueued  = 100 // names without a live lease whose waiters are shown
	uiReadBudget = 5 * time.Second
)

// uiStatusData is what the status page shows.
type uiStatusData struct {
	Now             string
	Healthy         bool
	HealthProblem   string
	Figures         []uiFigure
	Leases          []uiLease
	More            bool // more live leases than shown
	Queued          []uiLease
	HistoryShown    bool // the store keeps a history
	History         []uiEvent
	Problems        []string // what could not be read
	CanRevoke       bool     // the session may revoke
	AdminConfigured bool     // the server has an admin token
}

// uiFigure is one of the store's key figures.
type uiFigure struct{ Label, Value string }

// uiLease is a row of the leases table (or, with only Name and Waiting, of
// the names that have waiters but no live lease).
type uiLease struct {
	Name, Owner, Left, TTL string
	Token                  uint64
	Waiting                int
}

// uiEvent is a row of the history table.
type uiEvent struct {
	Time, Kind, Name, Owner, Reason string
	Token                           uint64
}

// gather reads what the page shows. A part that cannot be read is left out
// and named in Problems; the page still renders.
func (s *Server) gather(ctx context.Context, u uiSession, now time.Time) uiStatusData {
	ctx, cancel := context.WithTimeout(ctx, uiReadBudget)
	defer cancel()
	d := uiStatusData{Now: now.UTC().Format("2006-01-02 15:04:05 MST"), AdminConfigured: s.adminHash() != nil}
	d.CanRevoke = u.role == roleAdmin

	hctx, hcancel := context.WithTimeout(ctx, healthTimeout)
	if err := s.health(hctx); err != nil {
		d.HealthProblem = err.Error()
	} else {
		d.Healthy = true
	}
	hcancel()

	page, err := s.store.List(ctx, lease.ListRequest{Limit: uiMaxLeases})
	if err != nil {
		d.Problems = append(d.Problems, "leases: "+err.Error())
	}
	slices.SortFunc(page.Leases, func(a, b lease.Info) int { return strings.Compare(a.Name, b.Name) })
	d.More = page.Next != ""

	var waiting map[string]int
	if wc, ok := s.store.(lease.WaitCounter); ok {
		if waiting, err = wc.Waiting(ctx); err != nil {
			d.Problems = append(d.Problems, "waiters: "+err.Error())
		}
	}
	leased := make(map[string]bool, len(page.Leases))
	for _, in := range page.Leases {
		leased[in.Name] = true
		d.Leases = append(d.Leases, uiLease{
			Name: in.Name, Owner: in.Owner, Token: uint64(in.Token),
			Left: timeLeft(in.Expires.Sub(now)), TTL: shortDuration(in.TTL), Waiting: waiting[in.Name],
		})
	}
	total := 0
	for name, n := range waiting {
		total += n
		if !leased[name] && !d.More {
			d.Queued = append(d.Queued, uiLease{Name: name, Waiting: n})
		}
	}
	slices.SortFunc(d.Queued, func(a, b uiLease) int { return strings.Compare(a.Name, b.Name) })
	if len(d.Queued) > uiMaxQueued {
		d.Queued = d.Queued[:uiMaxQueued]
	}

	d.Figures = s.figures(ctx, &d, len(page.Leases), waiting != nil, total)
	d.HistoryShown, d.History = s.recentHistory(ctx, &d)
	return d
}

// figures returns the store's key figures: from its stats (Metrics.WatchStore)
// when it has them, else from the page of leases read.
func (s *Server) figures(ctx context.Context, d *uiStatusData, shown int, hasWaiters bool, waiting int) []uiFigure {
	var fs []uiFigure
	live := strconv.Itoa(shown)
	if d.More {
		live += "+"
	}
	var st *lease.Stats
	if f := s.metrics.stats.Load(); f != nil {
		got, err := f.read(ctx)
		if err != nil {
			d.Problems = append(d.Problems, "stats: "+err.Error())
		} else {
			st = &got
			live = strconv.FormatInt(got.Live, 10)
		}
	}
	fs = append(fs, uiFigure{"Live leases", live})
	if hasWaiters {
		fs = append(fs, uiFigure{"Waiting acquires", strconv.Itoa(waiting)})
	}
	if st != nil && st.Oldest >= 0 && st.Live > 0 {
		fs = append(fs, uiFigure{"Oldest lease", shortDuration(st.Oldest.Round(time.Second))})
	}
	if st != nil && st.WAL >= 0 {
		fs = append(fs, uiFigure{"SQLite -wal", byteSize(st.WAL)})
	}
	version, _, _ := buildInfo()
	fs = append(fs, uiFigure{"picket", version})
	return fs
}

// timeLeft renders the time until a lease's expiry.
func timeLeft(d time.Duration) string {
	if d <= 0 {
		return "expiring"
	}
	return shortDuration(d)
}

// shortDuration renders d to a precision a person reads: tenths of a
// second under 10 s, seconds under a day, minutes beyond; without the zero
// units time.Duration writes ("1h" for 1h0m0s, "10m" for 10m0s).
func shortDuration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < 24*time.Hour:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Minute)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// byteSize renders n bytes.
func byteSize(n int64) string {
	switch {
	case n < 10<<10:
		return fmt.Sprintf("%d B", n)
	case n < 10<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
