package leasetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/lease"
)

// testGet: Get shows the live lease as granted (never the holder); a free or
// expired name is ErrNotFound.
func (s suite) testGet(t *testing.T) {
	st, clk := s.open(t, 0)
	g := mustAcquire(t, st, request("get/a", "holder-a", 10*time.Second))
	if diff := cmp.Diff(g.Info(), mustGet(t, st, "get/a")); diff != "" {
		t.Errorf("Get mismatch (-want +got):\n%s", diff)
	}
	clk.Advance(3 * time.Second)
	if diff := cmp.Diff(g.Info(), mustGet(t, st, "get/a")); diff != "" {
		t.Errorf("Get 3 s later mismatch (-want +got):\n%s", diff)
	}
	_, err := st.Get(t.Context(), "get/free")
	wantErr(t, "Get of a free name", err, lease.ErrNotFound)
	_, err = st.Get(t.Context(), "get")
	wantErr(t, "Get of a prefix of a held name", err, lease.ErrNotFound)
	clk.Advance(8 * time.Second)
	_, err = st.Get(t.Context(), "get/a")
	wantErr(t, "Get after expiry", err, lease.ErrNotFound)
}

// testList: List shows the live leases whose names start with the prefix,
// byte for byte (no wildcards), sorted by name.
func (s suite) testList(t *testing.T) {
	st, clk := s.open(t, 0)
	mustAcquire(t, st, request("list/expired", "holder-x", time.Second))
	clk.Advance(2 * time.Second)
	grants := map[string]lease.Grant{}
	for i, name := range []string{"list/b", "list/a", "list/a%b", "list/a_c", "list/abc", "list/B", "other/x", "list/ü"} {
		grants[name] = mustAcquire(t, st, request(name, holderName(0, i), time.Minute))
	}
	infos := func(names ...string) []lease.Info {
		out := []lease.Info{}
		for _, n := range names {
			out = append(out, grants[n].Info())
		}
		return out
	}
	tests := []struct {
		prefix string
		want   []lease.Info
	}{
		{"", infos("list/B", "list/a", "list/a%b", "list/a_c", "list/abc", "list/b", "list/ü", "other/x")},
		{"list/", infos("list/B", "list/a", "list/a%b", "list/a_c", "list/abc", "list/b", "list/ü")},
		{"list/a", infos("list/a", "list/a%b", "list/a_c", "list/abc")},
		{"list/a_", infos("list/a_c")},
		{"list/a%", infos("list/a%b")},
		{"list/b", infos("list/b")},
		{"list/ü", infos("list/ü")},
		{"list/e", infos()},
		{"nothing", infos()},
	}
	for _, tc := range tests {
		got, err := lease.ListAll(t.Context(), st, tc.prefix)
		if err != nil {
			t.Errorf("List(%q): %v", tc.prefix, err)
			continue
		}
		if got == nil {
			got = []lease.Info{}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("List(%q) mismatch (-want +got):\n%s", tc.prefix, diff)
		}
	}
}

// testListPages: List hands out pages of at most Limit leases, each after the
// last name of the one before; Next is empty on the last page; the pages
// together are the whole list, each lease once.
func (s suite) testListPages(t *testing.T) {
	st, _ := s.open(t, 0)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("pages/%02d", i)
		mustAcquire(t, st, request(name, holderName(0, i), time.Minute))
		want = append(want, name)
	}
	mustAcquire(t, st, request("pagesz", "holder-z", time.Minute)) // outside the prefix
	for _, limit := range []int{1, 2, 3, 7, 8} {
		var got []string
		req := lease.ListRequest{Prefix: "pages/", Limit: limit}
		for range 10 {
			page, err := st.List(t.Context(), req)
			if err != nil {
				t.Fatalf("List(%+v): %v", req, err)
			}
			if len(page.Leases) > limit {
				t.Errorf("List(%+v) gave %d leases, more than the limit", req, len(page.Leases))
			}
			for _, i := range page.Leases {
				got = append(got, i.Name)
			}
			if page.Next == "" {
				break
			}
			req.After = page.Next
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pages of %d: names mismatch (-want +got):\n%s", limit, diff)
		}
	}
	page, err := st.List(t.Context(), lease.ListRequest{Prefix: "pages/", After: "pages/03"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(page.Leases); len(got) != 3 || got[0] != "pages/04" || page.Next != "" {
		t.Errorf("List after pages/03 = %v next %q; want pages/04..06 and no next", got, page.Next)
	}
}
