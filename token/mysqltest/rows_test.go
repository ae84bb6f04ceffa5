package mysqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/token"
)

// jobsTable is the table of the Rows tests.
const jobsTable = "CREATE TABLE jobs (id VARCHAR(64) PRIMARY KEY, result TEXT, fence BIGINT NOT NULL)"

// sessions are the ways a MariaDB session may evaluate an ON DUPLICATE KEY
// UPDATE's assignments: left to right (MySQL's rule, MariaDB's default), or
// all from the row as it was (MariaDB's SIMULTANEOUS_ASSIGNMENT). Rows must
// write the same under both, and under either way of counting rows.
var sessions = []struct {
	name string
	p    params
}{
	{"left to right/changed rows", nil},
	{"left to right/found rows", params{"clientFoundRows": "true"}},
	{"simultaneous/changed rows", params{"sql_mode": "'STRICT_TRANS_TABLES,SIMULTANEOUS_ASSIGNMENT'"}},
	{"simultaneous/found rows", params{"sql_mode": "'STRICT_TRANS_TABLES,SIMULTANEOUS_ASSIGNMENT'", "clientFoundRows": "true"}},
}

// TestRowsMySQL is token's TestRows on a real MariaDB, in every session of
// sessions: a missing row is ErrNotFound for Update (never ErrStale) and is
// inserted by Upsert; a stale token is ErrStale with the row's token and
// writes nothing; the holder may write again, the same values too.
func TestRowsMySQL(t *testing.T) {
	for _, sess := range sessions {
		t.Run(sess.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openMySQL(t, sess.p)
			if _, err := db.ExecContext(ctx, jobsTable); err != nil {
				t.Fatal(err)
			}
			rows, err := token.NewRows(token.MySQL, "jobs", "id", "fence", "result")
			if err != nil {
				t.Fatal(err)
			}
			steps := []struct {
				name    string
				op      string // "update" or "upsert"
				id      string
				tok     token.Token
				result  string
				wantErr error          // sentinel; nil for success
				stale   token.Token    // Highest of the *StaleError
				want    map[string]row // the table afterwards
			}{
				{name: "update a missing row", op: "update", id: "7", tok: 5, result: "x", wantErr: token.ErrNotFound,
					want: map[string]row{}},
				{name: "upsert inserts it", op: "upsert", id: "7", tok: 5, result: "A",
					want: map[string]row{"7": {"A", 5}}},
				{name: "same holder upserts the same again", op: "upsert", id: "7", tok: 5, result: "A",
					want: map[string]row{"7": {"A", 5}}},
				{name: "same holder updates", op: "update", id: "7", tok: 5, result: "A2",
					want: map[string]row{"7": {"A2", 5}}},
				{name: "same holder updates the same again", op: "update", id: "7", tok: 5, result: "A2",
					want: map[string]row{"7": {"A2", 5}}},
				{name: "same holder upserts", op: "upsert", id: "7", tok: 5, result: "A3",
					want: map[string]row{"7": {"A3", 5}}},
				{name: "newer holder upserts", op: "upsert", id: "7", tok: 6, result: "B",
					want: map[string]row{"7": {"B", 6}}},
				{name: "stale update", op: "update", id: "7", tok: 5, result: "A4", wantErr: token.ErrStale, stale: 6,
					want: map[string]row{"7": {"B", 6}}},
				{name: "stale upsert", op: "upsert", id: "7", tok: 5, result: "A4", wantErr: token.ErrStale, stale: 6,
					want: map[string]row{"7": {"B", 6}}},
				{name: "stale upsert of the row's own values", op: "upsert", id: "7", tok: 5, result: "B", wantErr: token.ErrStale, stale: 6,
					want: map[string]row{"7": {"B", 6}}},
				{name: "zero token", op: "upsert", id: "8", tok: 0, result: "Z", wantErr: token.ErrZero,
					want: map[string]row{"7": {"B", 6}}},
				{name: "token 2^53", op: "update", id: "7", tok: token.Max + 1, result: "Z", wantErr: token.ErrInvalid,
					want: map[string]row{"7": {"B", 6}}},
				{name: "newer holder updates, above 2^31", op: "update", id: "7", tok: 1 << 40, result: "C",
					want: map[string]row{"7": {"C", 1 << 40}}},
				{name: "largest token", op: "upsert", id: "7", tok: token.Max, result: "M",
					want: map[string]row{"7": {"M", token.Max}}},
				{name: "another row", op: "upsert", id: "8", tok: 2, result: "D",
					want: map[string]row{"7": {"M", token.Max}, "8": {"D", 2}}},
			}
			for _, s := range steps {
				err := inTx(ctx, db, nil, func(tx *sql.Tx) error {
					if s.op == "update" {
						return rows.Update(ctx, tx, s.id, s.tok, s.result)
					}
					return rows.Upsert(ctx, tx, s.id, s.tok, s.result)
				})
				switch {
				case s.wantErr == nil && err != nil:
					t.Fatalf("%s: %v", s.name, err)
				case s.wantErr != nil && !errors.Is(err, s.wantErr):
					t.Fatalf("%s: %v, want it matching %v", s.name, err, s.wantErr)
				case s.wantErr == token.ErrNotFound && errors.Is(err, token.ErrStale):
					t.Fatalf("%s: %v matches ErrStale", s.name, err)
				case s.wantErr == token.ErrStale:
					var stale *token.StaleError
					errors.As(err, &stale)
					want := &token.StaleError{Resource: "jobs/" + s.id, Token: s.tok, Highest: s.stale}
					if diff := cmp.Diff(want, stale); diff != "" {
						t.Errorf("%s: StaleError (-want +got):\n%s", s.name, diff)
					}
				}
				if diff := cmp.Diff(s.want, readJobs(t, db)); diff != "" {
					t.Errorf("%s: table (-want +got):\n%s", s.name, diff)
				}
			}
			err = rows.Update(ctx, db, "7", token.Max, "too", "many")
			if !errors.Is(err, token.ErrInvalid) {
				t.Errorf("Update with 2 values for 1 column = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestRowsUniqueClashMySQL: ON DUPLICATE KEY UPDATE fires on a clash with
// any unique key, and then updates the clashing row. Upsert of another key
// must leave that row as it was and say why, never write into it.
func TestRowsUniqueClashMySQL(t *testing.T) {
	ctx := context.Background()
	db, _ := openMySQL(t, nil)
	if _, err := db.ExecContext(ctx, "CREATE TABLE jobs (id VARCHAR(64) PRIMARY KEY, result VARCHAR(64) UNIQUE, fence BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	rows, err := token.NewRows(token.MySQL, "jobs", "id", "fence", "result")
	if err != nil {
		t.Fatal(err)
	}
	if err := inTx(ctx, db, nil, func(tx *sql.Tx) error { return rows.Upsert(ctx, tx, "7", 5, "A") }); err != nil {
		t.Fatal(err)
	}
	err = inTx(ctx, db, nil, func(tx *sql.Tx) error { return rows.Upsert(ctx, tx, "8", 9, "A") })
	if err == nil || errors.Is(err, token.ErrStale) || !strings.Contains(err.Error(), "unique key") {
		t.Errorf("Upsert of row 8 clashing with row 7 on result = %v; want an error naming the unique key, not ErrStale", err)
	}
	if diff := cmp.Diff(map[string]row{"7": {"A", 5}}, readJobs(t, db)); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// row is one row of the jobs table.
type row struct {
	Result string
	Fence  token.Token
}

func readJobs(t *testing.T, db *sql.DB) map[string]row {
	t.Helper()
	rs, err := db.Query(`SELECT id, result, fence FROM jobs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	got := map[string]row{}
	for rs.Next() {
		var (
			id string
			r  row
			f  int64
		)
		if err := rs.Scan(&id, &r.Result, &f); err != nil {
			t.Fatal(err)
		}
		r.Fence = token.Token(f)
		got[id] = r
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
