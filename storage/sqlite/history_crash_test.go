package sqlite_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

// historyGrants reads the tokens of the grant events in the file at path,
// raw (no Store), as the crash tests read the leases.
func historyGrants(t *testing.T, path string) map[token.Token]bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs, err := db.QueryContext(ctx, "SELECT seq, at, n, events FROM history")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[token.Token]bool{}
	for rs.Next() {
		var seq, at int64
		var n int
		var blob []byte
		if err := rs.Scan(&seq, &at, &n, &blob); err != nil {
			t.Fatal(err)
		}
		evs, err := sqlite.DecodeEvents(seq, at, n, blob)
		if err != nil {
			t.Fatalf("history row %d: %v", seq, err)
		}
		for _, e := range evs {
			if e.Kind == lease.EventGrant {
				out[e.Token] = true
			}
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
