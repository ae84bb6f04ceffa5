package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// TestListStreams: picket ls prints page by page. A real picket process
// lists a server on loopback whose pages are cut to 7 leases; the server
// holds back every page after the first until the test has read a lease
// line from the process's stdout (for 10 s at most in all). On the old ls, which read
// every page before printing anything, the first line comes only after the
// hold runs out. The -json output is byte for byte the list object of
// EncodeList over all 50 leases (but for expires_at, rendered at each read), and the table has a row for each.
func TestListStreams(t *testing.T) {
	st, err := sqlite.Open(t.TempDir() + "/picket.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for i := range 50 {
		if _, err := st.Acquire(ctx, lease.AcquireRequest{Name: fmt.Sprintf("job/%03d", i), Holder: "h", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := lease.ListAll(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := wire.EncodeList(&want, all); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []struct {
		name  string
		args  []string
		first string // what the first printed lease looks like
	}{
		{"table", nil, "job/000"},
		{"json", []string{"-json"}, `"name":"job/000"`},
	} {
		t.Run(mode.name, func(t *testing.T) {
			seen := make(chan struct{}) // closed when a lease line was read
			var once sync.Once
			var mu sync.Mutex
			var heldBack []bool         // per later page: was it served before a lease was printed?
			hold := make(chan struct{}) // closed 10 s in: hold nothing back any more
			stop := time.AfterFunc(10*time.Second, func() { close(hold) })
			defer stop.Stop()
			api, err := httpapi.NewServer(st)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/leases" {
					q := r.URL.Query()
					q.Set("limit", "7")
					if q.Get("after") != "" {
						printed := false
						select {
						case <-seen:
							printed = true
						case <-hold:
						}
						mu.Lock()
						heldBack = append(heldBack, printed)
						mu.Unlock()
					}
					r.URL.RawQuery = q.Encode()
				}
				api.ServeHTTP(w, r)
			}))
			defer srv.Close()

			cmd := picket(t, append([]string{"ls", "-server", srv.URL}, mode.args...)...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			r := bufio.NewReader(io.TeeReader(out, &got))
			buf := make([]byte, 64)
			for {
				n, err := r.Read(buf)
				if strings.Contains(got.String(), mode.first) {
					once.Do(func() { close(seen) })
				}
				if err != nil || n == 0 {
					break
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("picket ls: %v\n%s", err, errb.String())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(heldBack) != 7 { // 50 leases in pages of 7: 8 pages
				t.Errorf("%d later pages were asked for; want 7", len(heldBack))
			}
			for i, printed := range heldBack {
				if !printed {
					t.Fatalf("page %d was asked for before picket ls printed a lease: it reads every page before printing", i+2)
				}
			}
			if mode.name == "json" {
				// expires_at is rendered from the wall clock at each read.
				norm := regexp.MustCompile(`"expires_at":"[^"]*"`)
				if g, w := norm.ReplaceAllString(got.String(), "T"), norm.ReplaceAllString(want.String(), "T"); g != w {
					t.Errorf("ls -json is not the list object of EncodeList:\n got %.200s\nwant %.200s", got.String(), want.String())
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(got.String()), "\n")
			if len(lines) != 51 || !strings.HasPrefix(lines[0], "NAME") {
				t.Fatalf("the table has %d lines; want a header and 50 rows:\n%s", len(lines), got.String())
			}
			for i, l := range lines[1:] {
				if !strings.HasPrefix(l, fmt.Sprintf("job/%03d ", i)) {
					t.Errorf("row %d: %q", i, l)
				}
			}
		})
	}
}
