package token_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/token"
)

// backend is a real database of one dialect.
type backend struct {
	name    string
	dialect token.Dialect
	open    func(testing.TB) *sql.DB
	jobs    string // CREATE TABLE jobs
}

var backends = []backend{
	{name: "sqlite", dialect: token.SQLite, open: openSQLite,
		jobs: `CREATE TABLE jobs (id TEXT PRIMARY KEY, result TEXT, fence INTEGER NOT NULL)`},
	{name: "postgresql", dialect: token.PostgreSQL, open: openPostgres,
		jobs: `CREATE TABLE jobs (id TEXT PRIMARY KEY, result TEXT, fence BIGINT NOT NULL)`},
}

// inTx runs fn in a transaction committed only if fn returns nil.
func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// TestRows writes rows that carry their own token, on real SQLite and
// PostgreSQL: a missing row is ErrNotFound for Update (never ErrStale) and is
// inserted by Upsert; a stale token is ErrStale with the row's token.
func TestRows(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			db := b.open(t)
			if _, err := db.ExecContext(ctx, b.jobs); err != nil {
				t.Fatal(err)
			}
			rows, err := token.NewRows(b.dialect, "jobs", "id", "fence", "result")
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
				{name: "same holder updates", op: "update", id: "7", tok: 5, result: "A2",
					want: map[string]row{"7": {"A2", 5}}},
				{name: "newer holder upserts", op: "upsert", id: "7", tok: 6, result: "B",
					want: map[string]row{"7": {"B", 6}}},
				{name: "stale update", op: "update", id: "7", tok: 5, result: "A3", wantErr: token.ErrStale, stale: 6,
					want: map[string]row{"7": {"B", 6}}},
				{name: "stale upsert", op: "upsert", id: "7", tok: 5, result: "A3", wantErr: token.ErrStale, stale: 6,
					want: map[string]row{"7": {"B", 6}}},
				{name: "zero token", op: "upsert", id: "8", tok: 0, result: "Z", wantErr: token.ErrZero,
					want: map[string]row{"7": {"B", 6}}},
				{name: "token 2^53", op: "update", id: "7", tok: token.Max + 1, result: "Z", wantErr: token.ErrInvalid,
					want: map[string]row{"7": {"B", 6}}},
				{name: "above 2^31", op: "update", id: "7", tok: 1 << 40, result: "C",
					want: map[string]row{"7": {"C", 1 << 40}}},
				{name: "largest token", op: "upsert", id: "7", tok: token.Max, result: "M",
					want: map[string]row{"7": {"M", token.Max}}},
			}
			for _, s := range steps {
				err := inTx(ctx, db, func(tx *sql.Tx) error {
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
			if _, err := token.NewRows(b.dialect, "jobs", "id", "fence", "result"); err != nil {
				t.Fatal(err)
			}
			err = rows.Update(ctx, db, "7", token.Max, "too", "many")
			if !errors.Is(err, token.ErrInvalid) {
				t.Errorf("Update with 2 values for 1 column = %v, want ErrInvalid", err)
			}
		})
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

func TestRowsSQL(t *testing.T) {
	tests := []struct {
		name       string
		dialect    token.Dialect
		wantUpsert string
		wantUpdate string
	}{
		{
			name:    "sqlite",
			dialect: token.SQLite,
			wantUpsert: `INSERT INTO "jobs" AS cur ("id", "result", "owner", "fence") VALUES (?, ?, ?, ?)` +
				` ON CONFLICT ("id") DO UPDATE SET "result" = excluded."result", "owner" = excluded."owner", "fence" = excluded."fence"` +
				` WHERE excluded."fence" >= cur."fence"`,
			wantUpdate: `UPDATE "jobs" SET "result" = ?, "owner" = ?, "fence" = ? WHERE "id" = ? AND "fence" <= ?`,
		},
		{
			name:    "postgresql",
			dialect: token.PostgreSQL,
			wantUpsert: `INSERT INTO "jobs" AS cur ("id", "result", "owner", "fence") VALUES ($1, $2, $3, $4)` +
				` ON CONFLICT ("id") DO UPDATE SET "result" = excluded."result", "owner" = excluded."owner", "fence" = excluded."fence"` +
				` WHERE excluded."fence" >= cur."fence"`,
			wantUpdate: `UPDATE "jobs" SET "result" = $1, "owner" = $2, "fence" = $3 WHERE "id" = $4 AND "fence" <= $3`,
		},
		{
			// Every column compares with the row's own fence, which is
			// raised last (mysql.go: the order cannot change the answer).
			name:    "mysql",
			dialect: token.MySQL,
			wantUpsert: "INSERT INTO `jobs` (`id`, `result`, `owner`, `fence`) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE" +
				" `result` = IF(`id` = VALUES(`id`) AND `fence` <= VALUES(`fence`), VALUES(`result`), `result`)," +
				" `owner` = IF(`id` = VALUES(`id`) AND `fence` <= VALUES(`fence`), VALUES(`owner`), `owner`)," +
				" `fence` = IF(`id` = VALUES(`id`) AND `fence` <= VALUES(`fence`), VALUES(`fence`), `fence`)",
			wantUpdate: "UPDATE `jobs` SET `result` = ?, `owner` = ?, `fence` = ? WHERE `id` = ? AND `fence` <= ?",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := token.NewRows(tt.dialect, "jobs", "id", "fence", "result", "owner")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantUpsert, r.UpsertSQL()); diff != "" {
				t.Errorf("UpsertSQL (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUpdate, r.UpdateSQL()); diff != "" {
				t.Errorf("UpdateSQL (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewRowsRejects(t *testing.T) {
	tests := []struct {
		name    string
		dialect token.Dialect
		table   string
		key     string
		fence   string
		columns []string
	}{
		{"unknown dialect", token.Dialect(9), "jobs", "id", "fence", nil},
		{"bad table", token.SQLite, "Jobs", "id", "fence", nil},
		{"bad key", token.SQLite, "jobs", "id;", "fence", nil},
		{"bad fence", token.PostgreSQL, "jobs", "id", `fen"ce`, nil},
		{"bad column", token.PostgreSQL, "jobs", "id", "fence", []string{"ok", "not ok"}},
		{"key twice", token.SQLite, "jobs", "id", "fence", []string{"id"}},
		{"fence as key", token.SQLite, "jobs", "fence", "fence", nil},
		{"mysql backtick", token.MySQL, "jobs", "id", "fen`ce", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := token.NewRows(tt.dialect, tt.table, tt.key, tt.fence, tt.columns...)
			if !errors.Is(err, token.ErrInvalid) || r != nil {
				t.Errorf("NewRows = %v, %v; want nil, ErrInvalid", r, err)
			}
		})
	}
}
