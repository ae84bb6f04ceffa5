//go:build linux

package fenceproof

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// Write writes value to the home under token t, the compare and the write in
// one operation: nil when the home accepted it, an error matching
// token.ErrStale when a newer holder's token is there, another error
// otherwise.
type Write func(ctx context.Context, t token.Token, value string) error

// The environment a worker reads (set by Run).
const (
	envDB     = "PICKET_FENCEPROOF_DB"
	envTTL    = "PICKET_FENCEPROOF_TTL"
	envWrites = "PICKET_FENCEPROOF_WRITES"
	leaseName = "fenceproof"
)

// Plan says how long and how hard a run shakes the workers. The zero value
// of each field takes the default given beside it.
type Plan struct {
	Child   string        // the childtest function whose body calls Worker (required)
	Env     []string      // added to each worker's environment ("K=V"): where the home is
	Workers int           // concurrent writers; 4
	Grants  int           // the run ends after this many grants; 40
	Pauses  int           // and not before this many SIGSTOPs ended; 8
	TTL     time.Duration // each lease's TTL; 300 ms
	Writes  int           // writes per grant; 2
	Limit   time.Duration // the run ends at this bound whatever the counts; 60 s
	Seed    uint64        // the pause choices; 0: from the clock
}

func (p Plan) withDefaults() Plan {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&p.Workers, 4)
	def(&p.Grants, 40)
	def(&p.Pauses, 8)
	def(&p.Writes, 2)
	if p.TTL <= 0 {
		p.TTL = 300 * time.Millisecond
	}
	if p.Limit <= 0 {
		p.Limit = time.Minute
	}
	if p.Seed == 0 {
		p.Seed = uint64(time.Now().UnixNano())
	}
	return p
}

// Result is what a run saw.
type Result struct {
	Grants   int      // leases granted
	Pauses   int      // holders frozen past their TTL and thawed
	Accepted int      // writes the home accepted
	Refused  int      // writes the home refused as stale
	Stale    []string // accepted writes that overwrote a newer holder's
	Errors   []string // anything else a worker met
	Seed     uint64
}

func (r Result) String() string {
	return fmt.Sprintf("%d grants, %d pauses, %d writes accepted, %d refused as stale, %d stale writes accepted, %d errors (seed %d)",
		r.Grants, r.Pauses, r.Accepted, r.Refused, len(r.Stale), len(r.Errors), r.Seed)
}

// write is one write a worker reported.
type write struct {
	token      token.Token
	start, end int64 // CLOCK_MONOTONIC ns
	ok         bool
	line       string
}

// Run starts p.Workers workers on one lease in a SQLite file in t.TempDir()
// and freezes one holder in three, after its grant and before its first
// write, for three TTLs,
// until p.Grants grants and p.Pauses pauses were seen or p.Limit passed. It
// then stops the workers and returns what they reported.
func Run(t testing.TB, p Plan) Result {
	t.Helper()
	p = p.withDefaults()
	if p.Child == "" {
		t.Fatal("fenceproof: Plan.Child is empty")
	}
	db := filepath.Join(t.TempDir(), "proof.db")
	st, err := sqlite.Open(db) // made once here, so workers only open it
	if err != nil {
		t.Fatalf("fenceproof: %v", err)
	}
	st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), p.Limit+30*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(p.Seed, 0x5eed))
	var (
		mu      sync.Mutex
		res     = Result{Seed: p.Seed}
		writes  []write
		pausing sync.WaitGroup
		ending  bool // no new pause once the run is ending
		changed = make(chan struct{}, 1)
	)
	env := append([]string{envDB + "=" + db, envTTL + "=" + p.TTL.String(), envWrites + "=" + strconv.Itoa(p.Writes)}, p.Env...)
	procs := make([]*childtest.Proc, p.Workers)
	for i := range procs {
		onLine := func(line string) {
			f := strings.Fields(line)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case len(f) == 2 && f[0] == "grant":
				res.Grants++
				proc := procs[i]
				if ending || rng.IntN(3) != 0 {
					proc.Send("go")
				} else {
					proc.Stop() // it waits for "go" before its first write
					proc.Send("go")
					res.Pauses++
					pausing.Add(1)
					go func() {
						defer pausing.Done()
						time.Sleep(3 * p.TTL)
						proc.Cont()
					}()
				}
			case len(f) >= 5 && f[0] == "write":
				w, err := parseWrite(f, line)
				if err != nil {
					res.Errors = append(res.Errors, err.Error())
					break
				}
				writes = append(writes, w)
				if w.ok {
					res.Accepted++
				} else {
					res.Refused++
				}
			default:
				res.Errors = append(res.Errors, line)
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		mu.Lock() // onLine waits until procs[i] is set
		procs[i] = childtest.Start(t, ctx, p.Child, childtest.Options{Env: env, OnLine: onLine})
		mu.Unlock()
	}
	deadline := time.After(p.Limit)
	tick := time.NewTicker(p.TTL)
	defer tick.Stop()
wait:
	for {
		mu.Lock()
		done := res.Grants >= p.Grants && res.Pauses >= p.Pauses
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-deadline:
			break wait
		}
	}
	// Stop: thaw every frozen worker (its late write is part of the run),
	// then let each finish its turn and exit.
	mu.Lock()
	ending = true
	mu.Unlock()
	pausing.Wait()
	for _, proc := range procs {
		proc.Send("quit")
	}
	for _, proc := range procs {
		if err := proc.Wait(10*time.Second + 4*p.TTL); err != nil && !errors.Is(err, context.Canceled) {
			mu.Lock()
			res.Errors = append(res.Errors, fmt.Sprintf("worker %d: %v", proc.Pid(), err))
			mu.Unlock()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	res.Stale = stale(writes)
	return res
}

// stale returns the accepted writes sent after the home had acknowledged a
// write with a higher token.
func stale(ws []write) []string {
	acked := make([]write, 0, len(ws))
	for _, w := range ws {
		if w.ok {
			acked = append(acked, w)
		}
	}
	byEnd := append([]write(nil), acked...)
	sort.Slice(byEnd, func(i, j int) bool { return byEnd[i].end < byEnd[j].end })
	// highest[i]: the highest token among byEnd[:i+1].
	highest := make([]token.Token, len(byEnd))
	var h token.Token
	for i, w := range byEnd {
		h = max(h, w.token)
		highest[i] = h
	}
	var out []string
	for _, w := range acked {
		i := sort.Search(len(byEnd), func(i int) bool { return byEnd[i].end >= w.start }) - 1
		if i >= 0 && highest[i] > w.token {
			out = append(out, fmt.Sprintf("%s (token %d acknowledged before it was sent)", w.line, highest[i]))
		}
	}
	return out
}

func parseWrite(f []string, line string) (write, error) {
	t, err1 := token.Parse(f[1])
	start, err2 := strconv.ParseInt(f[2], 10, 64)
	end, err3 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return write{}, fmt.Errorf("bad line %q: %v", line, err)
	}
	switch f[4] {
	case "ok", "stale":
		return write{token: t, start: start, end: end, ok: f[4] == "ok", line: line}, nil
	}
	return write{}, fmt.Errorf("worker: %s", line)
}

// Check fails t unless r shows the fence working: no stale write accepted,
// at least one late write refused, no other error, and the pauses asked for.
func Check(t testing.TB, r Result) {
	t.Helper()
	t.Logf("fenceproof: %v", r)
	for _, s := range r.Stale {
		t.Errorf("stale write accepted: %s", s)
	}
	for _, e := range r.Errors {
		t.Errorf("worker: %s", e)
	}
	if r.Refused == 0 && len(r.Stale) == 0 {
		t.Errorf("no late write was refused in %d pauses: the run did not exercise the fence", r.Pauses)
	}
	if r.Pauses == 0 {
		t.Errorf("no holder was paused")
	}
}

// now reads CLOCK_MONOTONIC, one clock for every process of the host.
func now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// Worker is the body of a worker process (the function a home registers
// with childtest calls it and returns its result): until "quit" on its
// stdin, it acquires the proof's lease, says so and waits for "go" (the
// parent may freeze it first), then makes its writes with the lease's
// token, ignoring its handle — a paused holder's writes are what is proven.
// A refused write ends its turn, as a fenced worker must. It prints one line
// per grant and per write for Run.
func Worker(w Write) int {
	ttl, err1 := time.ParseDuration(os.Getenv(envTTL))
	writes, err2 := strconv.Atoi(os.Getenv(envWrites))
	if err := errors.Join(err1, err2); err != nil {
		fmt.Println("error", err)
		return 1
	}
	st, err := sqlite.Open(os.Getenv(envDB))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer st.Close()
	m, err := lease.NewManager(st)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ctx, quit := context.WithCancel(context.Background())
	goes := make(chan struct{}, 16)
	go func() { // "go" after each grant; "quit" or the end of stdin
		defer quit()
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() && in.Text() == "go" {
			goes <- struct{}{}
		}
	}()
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	for n := 0; ctx.Err() == nil; n++ {
		l, err := m.Acquire(ctx, leaseName, ttl)
		if err != nil {
			if ctx.Err() == nil {
				say("error acquire: %v", err)
			}
			continue
		}
		say("grant %d", l.Token())
		if !await(ctx, goes) {
			l.Release(context.Background())
			break
		}
		for i := range writes {
			start := now()
			err := w(context.Background(), l.Token(), fmt.Sprintf("%d:%d:%d", os.Getpid(), l.Token(), i))
			end := now()
			switch {
			case err == nil:
				say("write %d %d %d ok", l.Token(), start, end)
				continue
			case errors.Is(err, token.ErrStale):
				say("write %d %d %d stale", l.Token(), start, end)
			default:
				say("write %d %d %d error %v", l.Token(), start, end, err)
			}
			break
		}
		l.Release(context.Background())
	}
	return 0
}

// await waits for the parent's "go" and reports whether it came: a "go"
// sent before "quit" wins over it, so a thawed holder still makes its late
// write.
func await(ctx context.Context, goes <-chan struct{}) bool {
	select {
	case <-goes:
		return true
	default:
	}
	select {
	case <-goes:
		return true
	case <-ctx.Done():
		return false
	}
}

// Timed is one accepted write of a concurrency test in one process: its
// token, and when it was sent and acknowledged on one monotonic clock.
type Timed struct {
	Token      token.Token
	Start, End time.Duration
}

// Overtaken returns a line for each accepted write sent after a write with a
// higher token had been acknowledged: the rule Check applies to a proof's
// workers, for tests that time their writes in one process.
func Overtaken(ws []Timed) []string {
	in := make([]write, len(ws))
	for i, w := range ws {
		in[i] = write{token: w.Token, start: int64(w.Start), end: int64(w.End), ok: true,
			line: fmt.Sprintf("token %d sent at %v, acknowledged at %v", w.Token, w.Start, w.End)}
	}
	return stale(in)
}
