package token_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/picketlock/picket/token"
)

// layoutCase is a fences table made by hand before CreateTable runs.
type layoutCase struct {
	name   string
	create string // "" for none: CreateTable makes it
	want   string // a part of CreateTable's error; "" for nil
}

// TestCreateTableLayoutSQLite checks that CreateTable uses a table of the
// right layout however it was spelled, and refuses one of another layout,
// saying what differs.
func TestCreateTableLayoutSQLite(t *testing.T) {
	cases := []layoutCase{
		{name: "made by CreateTable"},
		{name: "same layout, other spelling",
			create: `CREATE TABLE fences (resource varchar(200) NOT NULL PRIMARY KEY, token BIGINT NOT NULL)`},
		{name: "without rowid",
			create: `CREATE TABLE fences (resource TEXT PRIMARY KEY, token INTEGER NOT NULL) WITHOUT ROWID`},
		{name: "explicit binary collation",
			create: `CREATE TABLE fences (resource TEXT COLLATE BINARY PRIMARY KEY, token INTEGER NOT NULL)`},
		{name: "text token",
			create: `CREATE TABLE fences (resource TEXT PRIMARY KEY, token TEXT NOT NULL)`,
			want:   "column token is TEXT, want INTEGER"},
		{name: "nocase resource",
			create: `CREATE TABLE fences (resource TEXT COLLATE NOCASE PRIMARY KEY, token INTEGER NOT NULL)`,
			want:   "the primary key compares with collation NOCASE, want BINARY; it declares COLLATE NOCASE"},
		{name: "nocase key only",
			create: `CREATE TABLE fences (resource TEXT, token INTEGER NOT NULL, PRIMARY KEY (resource COLLATE NOCASE))`,
			want:   "the primary key compares with collation NOCASE, want BINARY"},
		{name: "integer resource",
			create: `CREATE TABLE fences (resource INTEGER PRIMARY KEY, token INTEGER NOT NULL)`,
			want:   "column resource is INTEGER, want TEXT"},
		{name: "untyped resource",
			create: `CREATE TABLE fences (resource PRIMARY KEY, token INTEGER NOT NULL)`,
			want:   "column resource is without a type, want TEXT"},
		{name: "no key",
			create: `CREATE TABLE fences (resource TEXT, token INTEGER NOT NULL)`,
			want:   "column resource is not the primary key"},
		{name: "unique, not key",
			create: `CREATE TABLE fences (id INTEGER PRIMARY KEY, resource TEXT UNIQUE, token INTEGER NOT NULL)`,
			want:   "columns (id, resource, token), want (resource, token); column resource is not the primary key; column id is part of the primary key"},
		{name: "composite key",
			create: `CREATE TABLE fences (resource TEXT, token INTEGER NOT NULL, PRIMARY KEY (resource, token))`,
			want:   "column token is part of the primary key"},
		{name: "nullable token",
			create: `CREATE TABLE fences (resource TEXT PRIMARY KEY, token INTEGER)`,
			want:   "column token may be NULL, want NOT NULL"},
		{name: "extra column",
			create: `CREATE TABLE fences (resource TEXT PRIMARY KEY, token INTEGER NOT NULL, note TEXT)`,
			want:   "columns (resource, token, note), want (resource, token)"},
		{name: "other names",
			create: `CREATE TABLE fences (name TEXT PRIMARY KEY, fence INTEGER NOT NULL)`,
			want:   "columns (name, fence), want (resource, token)"},
	}
	runLayoutCases(t, token.SQLite, openSQLite, cases)
}

// TestCreateTableLayoutPostgreSQL is TestCreateTableLayoutSQLite on a real
// PostgreSQL.
func TestCreateTableLayoutPostgreSQL(t *testing.T) {
	cases := []layoutCase{
		{name: "made by CreateTable"},
		{name: "same layout, other spelling",
			create: `CREATE TABLE fences (resource varchar NOT NULL PRIMARY KEY, token int8 NOT NULL CHECK (token > 0))`},
		{name: "C collation",
			create: `CREATE TABLE fences (resource text COLLATE "C" PRIMARY KEY, token bigint NOT NULL)`},
		{name: "integer token (overflows at 2^31)",
			create: `CREATE TABLE fences (resource text PRIMARY KEY, token integer NOT NULL)`,
			want:   "column token is integer, want bigint"},
		{name: "text token",
			create: `CREATE TABLE fences (resource text PRIMARY KEY, token text NOT NULL)`,
			want:   "column token is text, want bigint"},
		{name: "nondeterministic collation",
			create: `CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
				CREATE TABLE fences (resource text COLLATE nocase PRIMARY KEY, token bigint NOT NULL)`,
			want: `column resource has the nondeterministic collation "nocase"`},
		{name: "varchar(8) resource",
			create: `CREATE TABLE fences (resource varchar(8) PRIMARY KEY, token bigint NOT NULL)`,
			want:   "column resource is character varying(8), want TEXT"},
		{name: "no key",
			create: `CREATE TABLE fences (resource text, token bigint NOT NULL)`,
			want:   "column resource is not the primary key"},
		{name: "composite key",
			create: `CREATE TABLE fences (resource text, token bigint NOT NULL, PRIMARY KEY (resource, token))`,
			want:   "column token is part of the primary key"},
		{name: "nullable token",
			create: `CREATE TABLE fences (resource text PRIMARY KEY, token bigint)`,
			want:   "column token may be NULL, want NOT NULL"},
		{name: "extra column",
			create: `CREATE TABLE fences (resource text PRIMARY KEY, token bigint NOT NULL, note text)`,
			want:   "columns (resource, token, note), want (resource, token)"},
	}
	runLayoutCases(t, token.PostgreSQL, openPostgres, cases)
}

func runLayoutCases(t *testing.T, d token.Dialect, open func(testing.TB) *sql.DB, cases []layoutCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			if tc.create != "" {
				if _, err := db.ExecContext(ctx, tc.create); err != nil {
					t.Fatal(err)
				}
			}
			g, err := token.NewGuard(d, token.DefaultTable)
			if err != nil {
				t.Fatal(err)
			}
			err = g.CreateTable(ctx, db)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CreateTable = %v, want nil", err)
				}
				if err := admit(ctx, db, g, "r", 9); err != nil {
					t.Fatalf("Admit(9) = %v", err)
				}
				if err := admit(ctx, db, g, "r", 10); err != nil {
					t.Fatalf("Admit(10) after 9 = %v", err)
				}
				return
			}
			if !errors.Is(err, token.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateTable = %v\nwant ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

// TestCreateTableLayoutHazards is the control for the layout check: on the
// tables CreateTable refuses, Admit really fences wrongly.
func TestCreateTableLayoutHazards(t *testing.T) {
	type step struct {
		resource string
		token    token.Token
	}
	tests := []struct {
		name   string
		dial   token.Dialect
		open   func(testing.TB) *sql.DB
		create string
		first  step
		then   step // a write that must be admitted, but is not
	}{
		{name: "sqlite text token orders 10 before 9", dial: token.SQLite, open: openSQLite,
			create: `CREATE TABLE fences (resource TEXT PRIMARY KEY, token TEXT NOT NULL)`,
			first:  step{"r", 9}, then: step{"r", 10}},
		{name: "sqlite nocase merges R and r", dial: token.SQLite, open: openSQLite,
			create: `CREATE TABLE fences (resource TEXT COLLATE NOCASE PRIMARY KEY, token INTEGER NOT NULL)`,
			first:  step{"R", 5}, then: step{"r", 4}},
		{name: "sqlite integer resource merges 007 and 7", dial: token.SQLite, open: openSQLite,
			create: `CREATE TABLE fences (resource INTEGER PRIMARY KEY, token INTEGER NOT NULL)`,
			first:  step{"007", 5}, then: step{"7", 4}},
		{name: "postgresql nondeterministic collation merges R and r", dial: token.PostgreSQL, open: openPostgres,
			create: `CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
				CREATE TABLE fences (resource text COLLATE nocase PRIMARY KEY, token bigint NOT NULL)`,
			first: step{"R", 5}, then: step{"r", 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := tt.open(t)
			if _, err := db.ExecContext(ctx, tt.create); err != nil {
				t.Fatal(err)
			}
			g, err := token.NewGuard(tt.dial, token.DefaultTable)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.CreateTable(ctx, db); !errors.Is(err, token.ErrInvalid) {
				t.Errorf("CreateTable = %v, want it refused", err)
			}
			// Used anyway, the table fences wrongly.
			if err := admit(ctx, db, g, tt.first.resource, tt.first.token); err != nil {
				t.Fatalf("Admit(%q, %d) = %v", tt.first.resource, tt.first.token, err)
			}
			err = admit(ctx, db, g, tt.then.resource, tt.then.token)
			if !errors.Is(err, token.ErrStale) {
				t.Errorf("control: Admit(%q, %d) on the refused table = %v; want the wrong ErrStale that the refusal prevents",
					tt.then.resource, tt.then.token, err)
			}
		})
	}
}
