package sqlite_test

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// The fault tests' children (see runChild): they grant fresh names from
// several goroutines and print one line per acknowledged grant,
//
//	ack <token> <name> <holder>
//
// after "integrity <PRAGMA integrity_check's answer>" and "ready". Besides
// the variables of runChild, they read:
//
//	PICKET_TEST_PRAGMAS      PRAGMAs to run on the writer after Open,
//	                         separated by ";" (synchronous = NORMAL is the
//	                         power-loss control's naive mode)
//	PICKET_TEST_CRASH_POINT  the hook point to die at ("crash" mode)
//	PICKET_TEST_CRASH_BATCH  at its Nth call
//	PICKET_TEST_WAITING      if set, the workers wait (Wait 2 s) for one
//	                         name held by 20 ms leases, each call with a
//	                         holder of its own, instead of granting fresh
//	                         names: nearly every grant is then made in a
//	                         waiting call's light batch (light.go)
//	PICKET_TEST_STORES       how many Stores the child opens on the file
//	                         (default 1), its workers shared among them:
//	                         each Store waits as a process of its own
//	PICKET_TEST_LIGHT_DELAY  if set, how long each Store's writer sleeps
//	                         after a light batch's COMMIT, before it
//	                         answers (hook point "light-committed"): the
//	                         window in which another Store can read what
//	                         the batch changed although it is not on disk,
//	                         made wide
//	PICKET_TEST_READER       if set (with PICKET_TEST_WAITING), a Store of
//	                         its own reads the name the workers wait for,
//	                         over and over (Get, as picket ls or another
//	                         process would), and prints each grant it sees:
//	                         "seen <token> <name> <owner, or ->"
func init() {
	childtest.Register("crash", crashChild)
	childtest.Register("power", grantChild)
}

// faultWorkers is how many goroutines of a child grant at once, so that
// batches carry several grants.
const faultWorkers = 4

// crashChild kills itself with SIGKILL when the writer reaches the crash
// point for the Nth time, granting until then.
func crashChild() int {
	point := os.Getenv("PICKET_TEST_CRASH_POINT")
	n, err := strconv.Atoi(os.Getenv("PICKET_TEST_CRASH_BATCH"))
	if err != nil || n < 1 {
		fmt.Printf("error crash batch %q\n", os.Getenv("PICKET_TEST_CRASH_BATCH"))
		return 1
	}
	calls := 0 // the writer goroutine's alone
	sqlite.SetTestHook(func(p string) {
		if p != point {
			return
		}
		if calls++; calls == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	})
	return grantChild()
}

// grantChild opens the store, checks the file's integrity and grants fresh
// names from faultWorkers goroutines until it is killed (or a minute has
// passed).
func grantChild() int {
	path, id := os.Getenv("PICKET_TEST_DB"), os.Getenv("PICKET_TEST_ID")
	stores := 1
	if v := os.Getenv("PICKET_TEST_STORES"); v != "" {
		var err error
		if stores, err = strconv.Atoi(v); err != nil || stores < 1 {
			fmt.Printf("error stores %q\n", v)
			return 1
		}
	}
	var delay time.Duration
	if v := os.Getenv("PICKET_TEST_LIGHT_DELAY"); v != "" {
		var err error
		if delay, err = time.ParseDuration(v); err != nil {
			fmt.Printf("error light delay %q\n", v)
			return 1
		}
	}
	var all []*sqlite.Store
	for range stores {
		s, err := sqlite.Open(path)
		if err != nil {
			fmt.Printf("error open: %v\n", err)
			return 1
		}
		defer s.Close()
		for _, p := range strings.Split(os.Getenv("PICKET_TEST_PRAGMAS"), ";") {
			if p == "" {
				continue
			}
			if err := sqlite.ExecWriter(s, "PRAGMA "+p); err != nil {
				fmt.Printf("error PRAGMA %s: %v\n", p, err)
				return 1
			}
		}
		if delay > 0 {
			sqlite.SetStoreHook(s, func(p string) {
				if p == "light-committed" {
					time.Sleep(delay)
				}
			})
		}
		all = append(all, s)
	}
	fmt.Printf("integrity %s\n", integrity(path))
	fmt.Println("ready")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waiting := os.Getenv("PICKET_TEST_WAITING") != ""
	var mu sync.Mutex // one whole line per write
	var wg sync.WaitGroup
	for w := range faultWorkers {
		s := all[w%len(all)]
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("%s/%d/%d", id, w, i)
				holder := "h-" + name
				req := lease.AcquireRequest{Name: name, Holder: holder, TTL: time.Hour}
				if waiting {
					req.Name, req.TTL, req.Wait = "wait", 20*time.Millisecond, 2*time.Second
				}
				g, err := s.Acquire(ctx, req)
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						fmt.Printf("error acquire %s: %v\n", name, err)
					}
				} else {
					fmt.Printf("ack %d %s %s\n", g.Token, req.Name, holder)
				}
				mu.Unlock()
				if err != nil {
					cancel()
				}
			}
		})
	}
	if os.Getenv("PICKET_TEST_READER") != "" && waiting {
		r, err := sqlite.Open(path)
		if err != nil {
			fmt.Printf("error open the reader: %v\n", err)
			return 1
		}
		defer r.Close()
		wg.Go(func() {
			var last lease.Info
			for ctx.Err() == nil {
				in, err := r.Get(ctx, "wait")
				if err != nil || in.Token == last.Token {
					continue // not held, or seen
				}
				last = in
				mu.Lock()
				fmt.Printf("seen %d %s %s\n", in.Token, in.Name, cmp.Or(in.Owner, "-"))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

// integrity runs PRAGMA integrity_check on a connection of its own.
func integrity(path string) string {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil {
		return err.Error()
	}
	return check
}
