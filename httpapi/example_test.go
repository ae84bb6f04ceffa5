package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// Example wires a server the way `picket serve` does, then takes a lease
// through a Client and writes with its token. A writer whose token was
// overtaken is refused where the data lives.
func Example() {
	dir, err := os.MkdirTemp("", "picket-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// The metrics first, so the store can feed them its commit batches.
	m := httpapi.NewMetrics()
	st, err := sqlite.Open(filepath.Join(dir, "picket.db"), sqlite.WithBatchHook(m.ObserveBatch))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close() // last: after the HTTP server has stopped
	srv, err := httpapi.NewServer(st, httpapi.WithKV(st), httpapi.WithMetrics(m), httpapi.WithAuthToken("s3cret"))
	if err != nil {
		fmt.Println(err)
		return
	}
	hs := srv.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0") // listen first: a bind error comes back at once
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = hs.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}()

	c, err := httpapi.NewClient("http://"+ln.Addr().String(), httpapi.WithAuthToken("s3cret"))
	if err != nil {
		fmt.Println(err)
		return
	}
	mgr, err := lease.NewManager(c, lease.WithOwner("example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	first, err := mgr.TryAcquire(ctx, "jobs/report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first holder, token", first.Token())
	if err := c.PutFenced(ctx, "report", []byte("draft"), first.Token()); err != nil {
		fmt.Println(err)
	}

	_, err = mgr.TryAcquire(ctx, "jobs/report", 10*time.Second)
	fmt.Println("while held:", errors.Is(err, lease.ErrHeld))

	// The first holder lets go (or its lease expires); a second one takes
	// over and writes.
	if err := first.Release(ctx); err != nil {
		fmt.Println(err)
	}
	second, err := mgr.TryAcquire(ctx, "jobs/report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("second holder, token", second.Token())
	if err := c.PutFenced(ctx, "report", []byte("final"), second.Token()); err != nil {
		fmt.Println(err)
	}

	// The first holder, had it paused instead, comes back with its old token.
	err = c.PutFenced(ctx, "report", []byte("late draft"), first.Token())
	var stale *token.StaleError
	if errors.As(err, &stale) {
		fmt.Println("late write refused; highest token seen:", stale.Highest)
	}
	value, tok, err := c.GetFenced(ctx, "report")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("report = %q, written with token %d\n", value, tok)
	if err := second.Release(ctx); err != nil {
		fmt.Println(err)
	}

	// Output:
	// first holder, token 1
	// while held: true
	// second holder, token 2
	// late write refused; highest token seen: 2
	// report = "final", written with token 2
}
