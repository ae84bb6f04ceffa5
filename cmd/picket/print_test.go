package main

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
)

// TestPrintField: acquire, renew and get print only the fields -print
// names, space-separated on one line, so a shell script reads a token
// without jq; a field that does not exist is a usage error and nothing is
// acquired.
func TestPrintField(t *testing.T) {
	db := tempDB(t)
	r := runPicket(t, "acquire", "-db", db, "-name", "p", "-ttl", "1m", "-print", "holder,token")
	holder, tok, ok := strings.Cut(strings.TrimSuffix(r.stdout, "\n"), " ")
	if r.code != exitOK || !ok || len(holder) != 32 || tok != "1" {
		t.Fatalf("acquire -print holder,token: exit %d, stdout %q, stderr %q; want \"HOLDER 1\"", r.code, r.stdout, r.stderr)
	}
	if r := runPicket(t, "renew", "-db", db, "-name", "p", "-holder", holder, "-token", tok, "-print", "token"); r.code != exitOK || r.stdout != "1\n" {
		t.Errorf("renew -print token: exit %d, stdout %q, stderr %q; want \"1\\n\"", r.code, r.stdout, r.stderr)
	}
	if r := runPicket(t, "get", "-db", db, "-name", "p", "-print", "token,ttl_ms"); r.code != exitOK || r.stdout != "1 60000\n" {
		t.Errorf("get -print token,ttl_ms: exit %d, stdout %q, stderr %q; want \"1 60000\\n\"", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"acquire", "-db", db, "-name", "q", "-print", "tokn"},
		{"get", "-db", db, "-name", "p", "-print", "holder"}, // a lease's public view has no holder
	} {
		if r := runPicket(t, args...); r.code != exitUsage || !strings.Contains(r.stderr, "is not a field") || r.stdout != "" {
			t.Errorf("picket %v: exit %d, stdout %q, stderr %q; want a usage error naming the fields", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runPicket(t, "get", "-db", db, "-name", "q"); r.code != exitNotFound {
		t.Errorf("get q after the refused acquire: exit %d; want %d (nothing acquired)", r.code, exitNotFound)
	}
}

// TestAcquireHold: acquire -hold prints the grant (here the token alone),
// keeps the lease past its TTL by renewing it, and releases it when
// SIGTERM comes, exiting 0, as etcdctl lock does.
func TestAcquireHold(t *testing.T) {
	db := tempDB(t)
	p, errb := startPicketProc(t, "acquire", "-db", db, "-name", "h", "-ttl", "3s", "-hold", "-print", "token")
	line, err := p.Line(0)
	if err != nil || line != "1" {
		t.Fatalf("acquire -hold -print token: first line %q, %v; want \"1\\n\"; stderr %s", line, err, errb.String())
	}
	// Past two TTLs, the lease is still the holder's: renewed.
	time.Sleep(7 * time.Second)
	if r := runPicket(t, "get", "-db", db, "-name", "h", "-print", "token"); r.code != exitOK || r.stdout != "1\n" {
		t.Errorf("get while held, after two TTLs: exit %d, stdout %q, stderr %q; want the lease, token 1", r.code, r.stdout, r.stderr)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(30 * time.Second); errors.Is(err, childtest.ErrTimeout) {
		t.Fatalf("acquire -hold did not exit after SIGTERM; stderr %s", errb.String())
	} else if err != nil {
		t.Errorf("acquire -hold after SIGTERM: %v; stderr %s", err, errb.String())
	}
	if r := runPicket(t, "get", "-db", db, "-name", "h"); r.code != exitNotFound {
		t.Errorf("get after acquire -hold ended: exit %d, stdout %q; want %d (released)", r.code, r.stdout, exitNotFound)
	}
}
