package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/picketlock/picket/lease"
)

// endedRows is the ended table (schema 6 and 7): name → token.
func endedRows(t *testing.T, path string) map[string]int64 {
	t.Helper()
	rows, err := rawDB(t, path).Query("SELECT name, token FROM ended")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var tok int64
		if err := rows.Scan(&name, &tok); err != nil {
			t.Fatal(err)
		}
		out[name] = tok
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEndedOnlyWhenWatched (issue 25): a lease that ends on a name nobody
// watches writes nothing for watches (schema 6's trigger wrote a row at
// every release); once a name is watched, its ends are recorded, by every
// Store on the file, and only its own: the name's watch still sees a grant
// and a release made by another Store between two of its calls.
func TestEndedOnlyWhenWatched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	s := mustOpenPath(t, path)
	g := mustAcquireName(t, s, "quiet", "holder-a")
	if err := s.Release(t.Context(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	if got := endedRows(t, path); len(got) != 0 {
		t.Fatalf("ended after a release nobody watched: %v, want no row", got)
	}

	s0 := watchOnce(t, s, "watched", lease.State{})
	other := mustOpenPath(t, path) // another Store on the file: its own writer
	var last lease.Grant
	for _, name := range []string{"quiet", "watched"} {
		last = mustAcquireName(t, other, name, "holder-b")
		if err := other.Release(t.Context(), lease.ReleaseRequest{Name: last.Name, Holder: last.Holder, Token: last.Token}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int64{"watched": int64(last.Token)}
	if got := endedRows(t, path); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ended = %v, want %v", got, want)
	}
	s1 := watchOnce(t, s, "watched", s0)
	if s1.Held || s1.Token != last.Token || s1.Reason != lease.ReasonReleased {
		t.Fatalf("after another Store's grant and release between two calls: %v, want free after %d (released)", s1, last.Token)
	}
}

// TestEndedKeptFromSchema6: a file at schema 6 keeps its ended rows as
// marks when it moves to 7 (a watch that spans the upgrade misses nothing
// on those names), and its trigger goes.
func TestEndedKeptFromSchema6(t *testing.T) {
	path := filepath.Join(t.TempDir(), "picket.db")
	db := rawFileAt(t, path, 6)
	for _, q := range []string{"PRAGMA user_version = 6", "UPDATE counter SET value = 3",
		"INSERT INTO ended (name, token, expires_at) VALUES ('old', 3, 0)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s := mustOpenPath(t, path)
	s0 := watchOnce(t, s, "old", lease.State{})
	if s0.Held || s0.Token != 3 {
		t.Fatalf("first read after the upgrade: %v, want free after 3", s0)
	}
	var triggers int
	if err := rawDB(t, path).QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'leases_ended'").Scan(&triggers); err != nil || triggers != 0 {
		t.Fatalf("trigger leases_ended: %d, %v; want gone", triggers, err)
	}
	g := mustAcquireName(t, s, "old", "holder-a")
	if err := s.Release(t.Context(), lease.ReleaseRequest{Name: g.Name, Holder: g.Holder, Token: g.Token}); err != nil {
		t.Fatal(err)
	}
	if s1 := watchOnce(t, s, "old", s0); s1.Held || s1.Token != g.Token || s1.Reason != lease.ReasonReleased {
		t.Fatalf("after a grant and a release: %v, want free after %d (released)", s1, g.Token)
	}
}
