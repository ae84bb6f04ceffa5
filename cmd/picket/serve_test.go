package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

func client(t testing.TB, url string) *httpapi.Client {
	t.Helper()
	c, err := httpapi.NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeSurvivesKill9 kills "picket serve" with SIGKILL and restarts it
// on the same file: live leases and fenced values survive, and the next
// token is above every token handed out before.
func TestServeSurvivesKill9(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "picket.db")
	var highest uint64
	var kept lease.Grant
	for round := 0; round < 3; round++ {
		srv := startServer(t, db)
		c := client(t, srv.url)
		if round > 0 {
			info, err := c.Get(ctx, kept.Name)
			if err != nil || info.Token != kept.Token {
				t.Fatalf("round %d: the live lease: Get = %+v, %v; want token %d", round, info, err, kept.Token)
			}
			v, tok, err := c.GetFenced(ctx, "config")
			if err != nil || string(v) != "v"+kept.Token.String() || tok != kept.Token {
				t.Fatalf("round %d: fenced value = %q, %d, %v", round, v, tok, err)
			}
		}
		for i := 0; i < 20; i++ {
			g, err := c.Acquire(ctx, lease.AcquireRequest{Name: "n" + strings.Repeat("x", i%3), Holder: lease.NewHolder(), TTL: time.Second})
			if err != nil {
				if errors.Is(err, lease.ErrHeld) {
					continue
				}
				t.Fatal(err)
			}
			if uint64(g.Token) <= highest {
				t.Fatalf("round %d: token %d after %d", round, g.Token, highest)
			}
			highest = uint64(g.Token)
		}
		var err error
		kept, err = c.Acquire(ctx, lease.AcquireRequest{Name: fmt.Sprintf("kept%d", round), Holder: lease.NewHolder(), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		highest = uint64(kept.Token)
		if err := c.PutFenced(ctx, "config", []byte("v"+kept.Token.String()), kept.Token); err != nil {
			t.Fatal(err)
		}
		srv.kill9(t)
	}
}

// TestServeShutsDownGracefully sends SIGTERM while a long poll is in flight:
// the request still gets a whole answer — 503 unavailable at once, which
// tells a client to try again, rather than holding shutdown for up to a
// minute — and picket serve exits 0.
func TestServeShutsDownGracefully(t *testing.T) {
	ctx := context.Background()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := startServer(t, tempDB(t))
			c := client(t, srv.url)
			if _, err := c.Acquire(ctx, lease.AcquireRequest{Name: "busy", Holder: "a", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			answered := make(chan error, 1)
			go func() {
				_, err := c.Acquire(ctx, lease.AcquireRequest{Name: "busy", Holder: "b", TTL: time.Minute, Wait: lease.MaxWait})
				answered <- err
			}()
			time.Sleep(300 * time.Millisecond) // let the long poll reach the server
			if code := srv.stop(t, sig); code != 0 {
				t.Errorf("picket serve exit %d after %v, want 0:\n%s", code, sig, srv.logs)
			}
			if err := <-answered; !errors.Is(err, lease.ErrUnavailable) || !strings.Contains(err.Error(), "shutting down") {
				t.Errorf("in-flight long poll: %v, want 503 unavailable: shutting down", err)
			}
			if _, err := http.Get(srv.url + "/healthz"); err == nil {
				t.Error("the server still answers after it exited")
			}
		})
	}
}

// TestServeTwoSignals: a second SIGINT while the server stops (a terminal's
// Ctrl-C under "go run" delivers two: one from the terminal, one relayed by
// go run) cuts the graceful wait short but does not kill the process: it
// exits 0 with the store closed cleanly, one file left. A request whose body
// never comes keeps the graceful stop waiting, and the long poll's "shutting
// down" answer says the stop has begun, when the second signal is sent. On
// the code before the fix the second signal killed the process: exit 130,
// the -wal and -shm files left behind.
func TestServeTwoSignals(t *testing.T) {
	db := tempDB(t)
	srv := startServer(t, db)
	c := client(t, srv.url)
	if _, err := c.Acquire(context.Background(), lease.AcquireRequest{Name: "busy", Holder: "a", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		_, err := c.Acquire(context.Background(), lease.AcquireRequest{Name: "busy", Holder: "b", TTL: time.Minute, Wait: lease.MaxWait})
		answered <- err
	}()
	slow, err := net.Dial("tcp", strings.TrimPrefix(srv.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /v1/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	time.Sleep(300 * time.Millisecond) // the long poll and the headers reach the server
	srv.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-answered:
		if !strings.Contains(fmt.Sprint(err), "shutting down") {
			t.Fatalf("the long poll: %v, want shutting down", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll was not answered after the first signal")
	}
	if code := srv.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("picket serve exit %d after a second SIGINT, want 0:\n%s", code, srv.logs)
	}
	if !strings.Contains(srv.logs.String(), "another signal while stopping") {
		t.Errorf("the second signal was not the one that ended the wait:\n%s", srv.logs)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(db + suffix); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the stop: %v; a clean close leaves the database file alone", filepath.Base(db+suffix), err)
		}
	}
}
