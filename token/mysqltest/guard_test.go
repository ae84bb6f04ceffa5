package mysqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/token"
)

// mustGuard returns a MySQL guard with its table created in db.
func mustGuard(tb testing.TB, db *sql.DB, table string) *token.Guard {
	tb.Helper()
	g, err := token.NewGuard(token.MySQL, table)
	if err != nil {
		tb.Fatal(err)
	}
	if err := g.CreateTable(context.Background(), db); err != nil {
		tb.Fatal(err)
	}
	return g
}

// admit runs g.Admit in its own transaction, committed only on success.
func admit(ctx context.Context, db *sql.DB, g *token.Guard, resource string, t token.Token) error {
	return inTx(ctx, db, nil, func(tx *sql.Tx) error { return g.Admit(ctx, tx, resource, t) })
}

// inTx runs fn in a transaction committed only if fn returns nil.
func inTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// foundRows are the two ways a client can ask MySQL to count rows: changed
// (go-sql-driver's default) or matched (CLIENT_FOUND_ROWS). The helpers must
// give the same answers under both.
var foundRows = []struct {
	name string
	p    params
}{
	{"changed rows", nil},
	{"found rows", params{"clientFoundRows": "true"}},
}

// TestGuardMySQL is token's TestGuardPostgreSQL on a real MariaDB: a
// sequence of tokens, each admitted in its own transaction, each answer and
// the highest token after it checked; with a table name that is a reserved
// word and one in another database; with rows counted either way.
func TestGuardMySQL(t *testing.T) {
	for _, fr := range foundRows {
		for _, table := range []string{token.DefaultTable, "order", "audit"} {
			t.Run(fr.name+"/"+table, func(t *testing.T) {
				ctx := context.Background()
				db, name := openMySQL(t, fr.p)
				if table == "audit" {
					other := name + "_audit"
					if _, err := db.ExecContext(ctx, "CREATE DATABASE "+other); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { db.ExecContext(ctx, "DROP DATABASE "+other) })
					table = other + ".fences_2"
				}
				g := mustGuard(t, db, table)
				if err := g.CreateTable(ctx, db); err != nil {
					t.Fatalf("second CreateTable: %v", err)
				}
				runGuardSteps(t, db, g)
			})
		}
	}
}

// runGuardSteps is token's runGuardSteps.
func runGuardSteps(t *testing.T, db *sql.DB, g *token.Guard) {
	t.Helper()
	ctx := context.Background()
	steps := []struct {
		resource string
		token    token.Token
		stale    token.Token // want a *StaleError with this Highest
	}{
		{"job:1", 5, 0},
		{"job:1", 5, 0}, // the holder writes again
		{"job:1", 4, 5},
		{"job:2", 1, 0},
		{"job:1", 7, 0},
		{"job:1", 5, 7},
		{"job:1", 1 << 31, 0}, // above a 32-bit integer
		{"job:1", token.Max, 0},
		{"job:1", token.Max, 0},
		{"job:1", 1 << 31, token.Max},
		{"R", 3, 0},
		{"r", 2, 0},  // another resource: names compare byte for byte
		{"r ", 1, 0}, // and do not pad
		{"é", 2, 0},
		{"e", 1, 0},
	}
	want := map[string]token.Token{}
	for i, s := range steps {
		err := admit(ctx, db, g, s.resource, s.token)
		if s.stale == 0 {
			if err != nil {
				t.Fatalf("step %d: Admit(%q, %d) = %v", i, s.resource, s.token, err)
			}
			want[s.resource] = s.token
		} else {
			var got *token.StaleError
			if !errors.As(err, &got) || !errors.Is(err, token.ErrStale) {
				t.Fatalf("step %d: Admit(%q, %d) = %v, want a *StaleError", i, s.resource, s.token, err)
			}
			wantErr := &token.StaleError{Resource: s.resource, Token: s.token, Highest: s.stale}
			if diff := cmp.Diff(wantErr, got); diff != "" {
				t.Errorf("step %d: StaleError (-want +got):\n%s", i, diff)
			}
		}
		h, err := g.Highest(ctx, db, s.resource)
		if err != nil || h != want[s.resource] {
			t.Fatalf("step %d: Highest(%q) = %d, %v; want %d", i, s.resource, h, err, want[s.resource])
		}
	}
}

// TestGuardBadTokenMySQL: an invalid token is refused before the database
// is touched.
func TestGuardBadTokenMySQL(t *testing.T) {
	ctx := context.Background()
	db, _ := openMySQL(t, nil)
	g := mustGuard(t, db, token.DefaultTable)
	for _, tok := range []token.Token{0, token.Max + 1, 1 << 63} {
		err := admit(ctx, db, g, "r", tok)
		if !errors.Is(err, token.ErrInvalid) || errors.Is(err, token.ErrStale) {
			t.Errorf("Admit(%d) = %v, want ErrInvalid, not ErrStale", tok, err)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM fences`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows after invalid tokens = %d, %v; want 0 (nothing written)", n, err)
	}
}

// TestGuardRollbackMySQL: the fence moves with the caller's transaction.
func TestGuardRollbackMySQL(t *testing.T) {
	ctx := context.Background()
	db, _ := openMySQL(t, nil)
	g := mustGuard(t, db, token.DefaultTable)
	if err := admit(ctx, db, g, "r", 3); err != nil {
		t.Fatal(err)
	}
	err := inTx(ctx, db, nil, func(tx *sql.Tx) error {
		if err := g.Admit(ctx, tx, "r", 9); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatal(err)
	}
	if h, err := g.Highest(ctx, db, "r"); err != nil || h != 3 {
		t.Errorf("Highest after rollback = %d, %v; want 3", h, err)
	}
}
