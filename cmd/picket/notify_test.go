package main

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSystemdNotify: under a Type=notify unit, picket serve sends READY=1
// once it listens (so the address in the log already answers) and
// STOPPING=1 when SIGTERM begins the shutdown.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	s := startServer(t, filepath.Join(t.TempDir(), "p.db"))

	read := func() string {
		t.Helper()
		buf := make([]byte, 512)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification from picket serve: %v\n%s", err, s.logs)
		}
		return string(buf[:n])
	}
	if got := read(); got != "READY=1" {
		t.Fatalf("first notification = %q, want READY=1", got)
	}
	// READY came after the listener was up: the server answers now.
	if r := runPicket(t, "ls", "-server", s.url); r.code != exitOK {
		t.Errorf("ls right after READY=1: exit %d: %s", r.code, r.stderr)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("serve exited %d after SIGTERM", code)
	}
	if got := read(); !strings.HasPrefix(got, "STOPPING=1") {
		t.Errorf("notification at shutdown = %q, want STOPPING=1", got)
	}
}
