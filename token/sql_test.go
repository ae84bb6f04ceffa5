package token_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/token"
	_ "modernc.org/sqlite"
)

// openSQLite opens a fresh SQLite file in t's temporary directory.
func openSQLite(tb testing.TB) *sql.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "data.db")
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(20000)&_pragma=synchronous(OFF)&_txlock=immediate")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// mustGuard returns a guard with its table created in db.
func mustGuard(tb testing.TB, db *sql.DB, d token.Dialect, table string) *token.Guard {
	tb.Helper()
	g, err := token.NewGuard(d, table)
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
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := g.Admit(ctx, tx, resource, t); err != nil {
		return err
	}
	return tx.Commit()
}

// TestGuardSQLite runs the statements of both dialects against a real SQLite
// file: SQLite reads "$1" as a parameter too, so the PostgreSQL text is
// executed here as well as on PostgreSQL in TestGuardPostgreSQL. (The table is
// made by the SQLite guard: CreateTable's layout check is dialect-specific.)
func TestGuardSQLite(t *testing.T) {
	for _, d := range []token.Dialect{token.SQLite, token.PostgreSQL} {
		for _, table := range []string{token.DefaultTable, "order", "main.fences_2"} {
			t.Run(d.String()+"/"+table, func(t *testing.T) {
				ctx := context.Background()
				db := openSQLite(t)
				maker := mustGuard(t, db, token.SQLite, table)
				// Creating again is harmless.
				if err := maker.CreateTable(ctx, db); err != nil {
					t.Fatalf("second CreateTable: %v", err)
				}
				g, err := token.NewGuard(d, table)
				if err != nil {
					t.Fatal(err)
				}
				runGuardSteps(t, db, g)
			})
		}
	}
}

// TestGuardPostgreSQL runs the PostgreSQL dialect on a real PostgreSQL.
func TestGuardPostgreSQL(t *testing.T) {
	for _, table := range []string{token.DefaultTable, "order", "audit.fences_2"} {
		t.Run(table, func(t *testing.T) {
			ctx := context.Background()
			db := openPostgres(t)
			if _, err := db.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS audit`); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.ExecContext(ctx, `DROP SCHEMA IF EXISTS audit CASCADE`) })
			g := mustGuard(t, db, token.PostgreSQL, table)
			if err := g.CreateTable(ctx, db); err != nil {
				t.Fatalf("second CreateTable: %v", err)
			}
			runGuardSteps(t, db, g)
		})
	}
}

// runGuardSteps admits a sequence of tokens, each in its own transaction, and
// checks each answer and the highest token after it.
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
		{"job:1", 1 << 31, token.Max},
		{"R", 3, 0},
		{"r", 2, 0}, // another resource: names compare byte for byte
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

func TestGuardBadToken(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	g := mustGuard(t, db, token.SQLite, token.DefaultTable)
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

// TestGuardRollback checks that the fence moves with the caller's
// transaction: a rolled-back admission leaves no trace.
func TestGuardRollback(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	g := mustGuard(t, db, token.SQLite, token.DefaultTable)
	if err := admit(ctx, db, g, "r", 3); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Admit(ctx, tx, "r", 9); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if h, err := g.Highest(ctx, db, "r"); err != nil || h != 3 {
		t.Errorf("Highest after rollback = %d, %v; want 3", h, err)
	}
}

func TestGuardSQL(t *testing.T) {
	tests := []struct {
		name       string
		dialect    token.Dialect
		table      string
		wantAdmit  string
		wantCreate string
	}{
		{
			name:    "sqlite",
			dialect: token.SQLite,
			table:   "fences",
			wantAdmit: `INSERT INTO "fences" AS cur (resource, token) VALUES (?, ?)` +
				` ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE excluded.token >= cur.token`,
			wantCreate: `CREATE TABLE IF NOT EXISTS "fences" (resource TEXT PRIMARY KEY, token INTEGER NOT NULL CHECK (token > 0))`,
		},
		{
			name:    "postgresql",
			dialect: token.PostgreSQL,
			table:   "fences",
			wantAdmit: `INSERT INTO "fences" AS cur (resource, token) VALUES ($1, $2)` +
				` ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE excluded.token >= cur.token`,
			wantCreate: `CREATE TABLE IF NOT EXISTS "fences" (resource TEXT PRIMARY KEY, token bigint NOT NULL CHECK (token > 0))`,
		},
		{
			name:    "postgresql with schema",
			dialect: token.PostgreSQL,
			table:   "audit.job_fences",
			wantAdmit: `INSERT INTO "audit"."job_fences" AS cur (resource, token) VALUES ($1, $2)` +
				` ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE excluded.token >= cur.token`,
			wantCreate: `CREATE TABLE IF NOT EXISTS "audit"."job_fences" (resource TEXT PRIMARY KEY, token bigint NOT NULL CHECK (token > 0))`,
		},
		{
			name:    "mysql with schema",
			dialect: token.MySQL,
			table:   "audit.job_fences",
			wantAdmit: "INSERT INTO `audit`.`job_fences` (`resource`, `token`) VALUES (?, ?)" +
				" ON DUPLICATE KEY UPDATE `token` = GREATEST(`token`, VALUES(`token`))",
			wantCreate: "CREATE TABLE IF NOT EXISTS `audit`.`job_fences` (`resource` VARBINARY(767) NOT NULL PRIMARY KEY," +
				" `token` BIGINT NOT NULL CHECK (`token` > 0)) ENGINE=InnoDB",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := token.NewGuard(tt.dialect, tt.table)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantAdmit, g.AdmitSQL()); diff != "" {
				t.Errorf("AdmitSQL (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCreate, g.CreateTableSQL()); diff != "" {
				t.Errorf("CreateTableSQL (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewGuardRejects(t *testing.T) {
	tests := []struct {
		name    string
		dialect token.Dialect
		table   string
	}{
		{"unknown dialect", token.Dialect(0), "fences"},
		{"empty", token.SQLite, ""},
		{"uppercase", token.SQLite, "Fences"},
		{"leading digit", token.SQLite, "1fences"},
		{"injection", token.SQLite, "fences; DROP TABLE jobs"},
		{"quote", token.PostgreSQL, `fen"ces`},
		{"space", token.PostgreSQL, "my fences"},
		{"dash", token.PostgreSQL, "my-fences"},
		{"two dots", token.PostgreSQL, "a.b.c"},
		{"empty schema", token.PostgreSQL, ".fences"},
		{"empty table after schema", token.PostgreSQL, "audit."},
		{"non-ascii", token.PostgreSQL, "f\u00e9nces"},
		{"too long", token.PostgreSQL, strings.Repeat("f", 64)},
		{"backtick", token.MySQL, "fen`ces"},
		{"mysql injection", token.MySQL, "fences` (x int); DROP TABLE jobs; --"},
		{"mysql uppercase", token.MySQL, "Fences"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := token.NewGuard(tt.dialect, tt.table)
			if !errors.Is(err, token.ErrInvalid) || g != nil {
				t.Errorf("NewGuard(%v, %q) = %v, %v; want nil, ErrInvalid", tt.dialect, tt.table, g, err)
			}
		})
	}
	if _, err := token.NewGuard(token.PostgreSQL, strings.Repeat("f", 63)); err != nil {
		t.Errorf("NewGuard with a 63-byte name: %v", err)
	}
}
