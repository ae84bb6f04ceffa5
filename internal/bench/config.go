package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
)

// The workloads (Config.Workloads, Row.Names); see the package doc.
const (
	Distinct = "distinct" // each client acquires and releases its own name
	Fresh    = "fresh"    // each client acquires a new name each time, never released
	Hot      = "hot"      // every client acquires one name, waiting, and releases it
)

// Defaults for the zero fields of a Config.
const (
	// DefaultDuration is how long each step runs.
	DefaultDuration = 5 * time.Second

	// DefaultMaxOps bounds the operations (cycles or grants) one step
	// starts, so that a very fast store ends a step early rather than run
	// away.
	DefaultMaxOps = 10_000_000

	// DefaultTTL is the TTL of every lease the benchmark takes. Fresh
	// grants are never released: they expire after it.
	DefaultTTL = 30 * time.Second

	// DefaultGrace is how long a step may run past its Duration for the
	// operations in flight to finish; after it they are cancelled.
	DefaultGrace = 30 * time.Second

	// DefaultOwner is the owner label of every benchmark lease.
	DefaultOwner = "picket-bench"
)

// DefaultClients returns the sweep of client counts used when
// Config.Clients is empty: a new slice each call, which the caller may keep.
func DefaultClients() []int { return []int{1, 4, 16, 64, 256} }

// Describe says in a few words what workload w measures, for legends.
func Describe(w string) string {
	switch w {
	case Distinct:
		return "acquire+release, own name"
	case Fresh:
		return "fresh grants, never released"
	case Hot:
		return "one hot name, hand-over"
	}
	return w
}

// DefaultWorkloads returns the workloads run when Config.Workloads is
// empty: a new slice each call, which the caller may keep.
func DefaultWorkloads() []string { return []string{Distinct, Fresh, Hot} }

// MaxClients bounds a step's client count.
const MaxClients = 10_000

// Config says what Run measures. The zero value of each field means its
// default; Run never writes to a Config.
type Config struct {
	// Store is the store under test. Required.
	Store lease.Store

	// Clients lists the client counts of the sweep, each run as a step of
	// every workload (default DefaultClients()).
	Clients []int

	// Workloads lists the workloads, run in this order for each client
	// count (default DefaultWorkloads()).
	Workloads []string

	// Duration is how long each step runs (default DefaultDuration).
	Duration time.Duration

	// MaxOps bounds the operations each step starts (default
	// DefaultMaxOps).
	MaxOps int64

	// TTL is the TTL of the leases taken (default DefaultTTL). It must be
	// a whole number of milliseconds within lease.MinTTL and lease.MaxTTL.
	TTL time.Duration

	// Prefix starts every lease name the benchmark uses (default
	// "picket-bench/" and a random run id), so that runs never meet.
	Prefix string

	// Cleanup, if set, releases after each step every lease the step left
	// held (the fresh grants, and any lease whose release failed), so that a
	// run against a shared server leaves nothing behind. The time it takes
	// is not measured.
	Cleanup bool

	// Progress, if set, is called at the start and the end of each step,
	// from the goroutine that called Run.
	Progress func(Progress)
}

// Progress reports a step starting (Row nil) or ending.
type Progress struct {
	Step, Steps int           // this step, from 1, and how many there are
	Names       string        // the workload
	Clients     int           // the number of clients
	Elapsed     time.Duration // since Run started
	Row         *Row          // the step's result, when it ended
}

// settings is a Config with its defaults filled in.
type settings struct {
	store     lease.Store
	clients   []int
	workloads []string
	duration  time.Duration
	maxOps    int64
	ttl       time.Duration
	grace     time.Duration
	prefix    string
	progress  func(Progress)
	cleanup   bool
}

func (c Config) settings() (settings, error) {
	s := settings{
		store:     c.Store,
		clients:   slices.Clone(c.Clients),
		workloads: slices.Clone(c.Workloads),
		duration:  c.Duration,
		maxOps:    c.MaxOps,
		ttl:       c.TTL,
		grace:     DefaultGrace,
		prefix:    c.Prefix,
		progress:  c.Progress,
		cleanup:   c.Cleanup,
	}
	if s.store == nil {
		return s, invalidf("no store")
	}
	if len(s.clients) == 0 {
		s.clients = DefaultClients()
	}
	for _, n := range s.clients {
		if n < 1 || n > MaxClients {
			return s, invalidf("client count %d is out of bounds [1, %d]", n, MaxClients)
		}
	}
	if len(s.workloads) == 0 {
		s.workloads = DefaultWorkloads()
	}
	for _, w := range s.workloads {
		if w != Distinct && w != Fresh && w != Hot {
			return s, invalidf("unknown workload %q (want %s, %s or %s)", w, Distinct, Fresh, Hot)
		}
	}
	switch {
	case s.duration == 0:
		s.duration = DefaultDuration
	case s.duration < 0:
		return s, invalidf("duration %v is negative", s.duration)
	}
	switch {
	case s.maxOps == 0:
		s.maxOps = DefaultMaxOps
	case s.maxOps < 0:
		return s, invalidf("max ops %d is negative", s.maxOps)
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	if err := storekit.ValidateTTL(s.ttl); err != nil {
		return s, fmt.Errorf("benchmarks: %w", err)
	}
	if s.prefix == "" {
		s.prefix = "picket-bench/" + lease.NewHolder()[:8] + "/"
	}
	if err := storekit.ValidateName(s.prefix); err != nil {
		return s, fmt.Errorf("benchmarks: prefix: %w", err)
	}
	return s, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("benchmarks: %w: %s", lease.ErrInvalid, fmt.Sprintf(format, args...))
}
