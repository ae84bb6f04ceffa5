package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// TestListPages: GET /v1/leases pages with limit and after, says "next"
// while more follow and not on the last page; the Client and lease.ListAll
// follow the pages; unknown, repeated or out-of-bounds parameters are a 400
// (a typo must not list everything).
func TestListPages(t *testing.T) {
	e := newEnv(t)
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("jobs/%02d", i)
		e.acquire(t, name, "h", "o", time.Minute)
		want = append(want, name)
	}
	e.acquire(t, "other", "h", "o", time.Minute)

	type page struct {
		Leases []struct {
			Name string `json:"name"`
		} `json:"leases"`
		Next *string `json:"next"`
	}
	var got []string
	after := ""
	for i := 0; ; i++ {
		q := url.Values{"prefix": {"jobs/"}, "limit": {"10"}}
		if after != "" {
			q.Set("after", after)
		}
		a := e.do(t, http.MethodGet, "/v1/leases?"+q.Encode(), "", nil)
		if a.status != 200 {
			t.Fatalf("page %d: %d %s", i, a.status, a.body)
		}
		var p page
		if err := json.Unmarshal(a.body, &p); err != nil {
			t.Fatal(err)
		}
		for _, l := range p.Leases {
			got = append(got, l.Name)
		}
		if p.Next == nil {
			if i != 2 || len(p.Leases) != 5 {
				t.Errorf("last page is page %d with %d leases, want page 2 with 5", i, len(p.Leases))
			}
			break
		}
		if len(p.Leases) != 10 || *p.Next != p.Leases[9].Name {
			t.Errorf("page %d: %d leases, next %q; want 10 and the last name", i, len(p.Leases), *p.Next)
		}
		after = *p.Next
		if i > 5 {
			t.Fatal("pages never end")
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names over the pages (-want +got):\n%s", diff)
	}
	all, err := lease.ListAll(t.Context(), e.client(t), "jobs/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range all {
		names = append(names, i.Name)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("ListAll through the Client (-want +got):\n%s", diff)
	}
	p, err := e.client(t).List(t.Context(), lease.ListRequest{Prefix: "jobs/", Limit: 7, After: "jobs/03"})
	if err != nil || len(p.Leases) != 7 || p.Leases[0].Name != "jobs/04" || p.Next != "jobs/10" {
		t.Errorf("Client.List after jobs/03, limit 7: %+v, %v", p, err)
	}

	for _, q := range []string{"Prefix=jobs", "prefx=jobs", "limit=0", "limit=10001", "limit=-1", "limit=x", "prefix=a&prefix=b", "cursor=x", "after=%ff"} {
		a := e.do(t, http.MethodGet, "/v1/leases?"+q, "", nil)
		if a.status != 400 {
			t.Errorf("?%s: %d, want 400", q, a.status)
			continue
		}
		wantJSON(t, "?"+q, `{"error":"bad_request"}`, a.body)
	}
}

// slowLists counts the Lists in the store at once, each made to take a
// while so that lists overlap.
type slowLists struct {
	lease.Store
	now, peak atomic.Int32
}

func (s *slowLists) List(ctx context.Context, req lease.ListRequest) (lease.ListPage, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	time.Sleep(20 * time.Millisecond)
	return s.Store.List(ctx, req)
}

// TestListsTakeTurns: 64 lists at once reach the store at most
// DefaultMaxLists at a time (the others wait their turn and are answered),
// while point reads sent meanwhile are answered at once, not behind the
// lists. The control serves the same storm without the bound
// (WithMaxLists(0)): the lists then reach the store many at once, which is
// what took every read connection and made point reads wait seconds.
func TestListsTakeTurns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []httpapi.Option
		maxPeak int32 // the most lists in the store at once
		minPeak int32
	}{
		{"bounded", nil, httpapi.DefaultMaxLists, 1},
		{"control: unbounded", []httpapi.Option{httpapi.WithMaxLists(0)}, 64, httpapi.DefaultMaxLists + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := mustOpenStore(t, nil)
			sl := &slowLists{Store: st}
			srv := newServer(t, sl, tc.opts...)
			e := &env{store: st, srv: srv, url: "http://" + serveOn(t, srv, nil),
				hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}}
			defer e.hc.CloseIdleConnections()
			for i := range 200 {
				e.acquire(t, fmt.Sprintf("l/%03d", i), "h", "o", time.Hour)
			}
			var wg sync.WaitGroup
			statuses := make(chan int, 64)
			for range 64 {
				wg.Go(func() {
					a, err := e.send(context.Background(), http.MethodGet, "/v1/leases?limit=10000", "", nil)
					if err != nil {
						t.Error(err)
						return
					}
					statuses <- a.status
				})
			}
			// Point reads during the storm.
			var slowest time.Duration
			for range 20 {
				start := time.Now()
				a := e.do(t, http.MethodGet, "/v1/leases/l%2F007", "", nil)
				slowest = max(slowest, time.Since(start))
				if a.status != 200 {
					t.Errorf("a point read during the lists: %d %s", a.status, a.body)
				}
			}
			wg.Wait()
			close(statuses)
			for s := range statuses {
				if s != 200 {
					t.Errorf("a list: status %d, want 200 (lists wait their turn)", s)
				}
			}
			peak := sl.peak.Load()
			t.Logf("peak %d lists in the store at once; slowest point read %v", peak, slowest)
			if peak > tc.maxPeak || peak < tc.minPeak {
				t.Errorf("peak %d lists in the store at once, want between %d and %d", peak, tc.minPeak, tc.maxPeak)
			}
		})
	}
}
