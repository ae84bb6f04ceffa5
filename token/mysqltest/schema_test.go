package mysqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picketlock/picket/token"
)

// TestCreateTableLayoutMySQL is token's TestCreateTableLayoutPostgreSQL on a
// real MariaDB: CreateTable uses a table of the right layout however it was
// spelled, and refuses one of another layout, saying what differs.
func TestCreateTableLayoutMySQL(t *testing.T) {
	cases := []struct {
		name   string
		create string // "" for none: CreateTable makes it
		want   string // a part of CreateTable's error; "" for nil
	}{
		{name: "made by CreateTable"},
		{name: "varchar, nopad binary collation, unsigned token",
			create: "CREATE TABLE fences (resource VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL PRIMARY KEY, token BIGINT UNSIGNED NOT NULL)"},
		{name: "varbinary, other width, key apart",
			create: "CREATE TABLE fences (resource VARBINARY(300) NOT NULL, token BIGINT NOT NULL, PRIMARY KEY (resource)) ENGINE=InnoDB"},
		{name: "padding binary collation",
			create: "CREATE TABLE fences (resource VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, token BIGINT NOT NULL)",
			want:   `collation utf8mb4_bin, which pads with spaces: "r" and "r " are one resource`},
		{name: "case-insensitive collation",
			create: "CREATE TABLE fences (resource VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY, token BIGINT NOT NULL)",
			want:   "collation utf8mb4_general_ci, which makes different names equal"},
		{name: "the server's default collation",
			create: "CREATE TABLE fences (resource VARCHAR(200) PRIMARY KEY, token BIGINT NOT NULL)",
			want:   "which makes different names equal"},
		{name: "int token (overflows at 2^31)",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token INT NOT NULL)",
			want:   "column token is int(11), want BIGINT"},
		{name: "text token",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token VARCHAR(20) NOT NULL)",
			want:   "column token is varchar(20), want BIGINT"},
		{name: "decimal token",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token DECIMAL(20) NOT NULL)",
			want:   "column token is decimal(20,0), want BIGINT"},
		{name: "char resource (pads)",
			create: "CREATE TABLE fences (resource BINARY(16) PRIMARY KEY, token BIGINT NOT NULL)",
			want:   "column resource is binary(16), want VARBINARY or VARCHAR"},
		{name: "integer resource",
			create: "CREATE TABLE fences (resource BIGINT PRIMARY KEY, token BIGINT NOT NULL)",
			want:   "column resource is bigint(20), want VARBINARY or VARCHAR"},
		{name: "prefix key",
			create: "CREATE TABLE fences (resource VARBINARY(255) NOT NULL, token BIGINT NOT NULL, PRIMARY KEY (resource(8)))",
			want:   "the primary key holds the first 8 characters of resource only"},
		{name: "no key",
			create: "CREATE TABLE fences (resource VARBINARY(255) NOT NULL, token BIGINT NOT NULL)",
			want:   "column resource is not the primary key"},
		{name: "another unique key",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token BIGINT NOT NULL, UNIQUE KEY by_token (token))",
			want:   "unique key by_token besides the primary key"},
		{name: "composite key",
			create: "CREATE TABLE fences (resource VARBINARY(255), token BIGINT NOT NULL, PRIMARY KEY (resource, token))",
			want:   "column token is part of the primary key"},
		{name: "nullable token",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token BIGINT)",
			want:   "column token may be NULL, want NOT NULL"},
		{name: "extra column",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token BIGINT NOT NULL, note TEXT)",
			want:   "columns (resource, token, note), want (resource, token)"},
		{name: "MyISAM",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token BIGINT NOT NULL) ENGINE=MyISAM",
			want:   "the table's engine is MyISAM, want InnoDB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openMySQL(t, nil)
			if tc.create != "" {
				if _, err := db.ExecContext(ctx, tc.create); err != nil {
					t.Fatal(err)
				}
			}
			g, err := token.NewGuard(token.MySQL, token.DefaultTable)
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

// TestCreateTableLayoutHazardsMySQL is the control for the layout check:
// on the tables CreateTable refuses, Admit really fences wrongly — merges
// two resources into one (a write refused that must be admitted), or keeps
// a rolled-back admission.
func TestCreateTableLayoutHazardsMySQL(t *testing.T) {
	type step struct {
		resource string
		token    token.Token
	}
	tests := []struct {
		name     string
		create   string
		first    step
		then     step  // a write that must be admitted, but is not
		rollback bool  // first is rolled back, then must still be admitted
		wrong    error // the wrong answer then gets; ErrStale if nil
	}{
		{name: "padding collation merges r and r-space",
			create: "CREATE TABLE fences (resource VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, token BIGINT NOT NULL)",
			first:  step{"r", 5}, then: step{"r ", 4}},
		{name: "case-insensitive collation merges R and r",
			create: "CREATE TABLE fences (resource VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY, token BIGINT NOT NULL)",
			first:  step{"R", 5}, then: step{"r", 4}},
		{name: "accent-insensitive collation merges e and é",
			create: "CREATE TABLE fences (resource VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci PRIMARY KEY, token BIGINT NOT NULL)",
			first:  step{"é", 5}, then: step{"e", 4}},
		{name: "prefix key merges names that share 8 bytes",
			create: "CREATE TABLE fences (resource VARBINARY(255) NOT NULL, token BIGINT NOT NULL, PRIMARY KEY (resource(8)))",
			// The statement updates the other name's row; the read back
			// finds none: a conflict that no retry resolves.
			first: step{"report/2024-05-01", 5}, then: step{"report/2024-05-02", 4}, wrong: token.ErrConflict},
		{name: "MyISAM keeps a rolled-back admission",
			create: "CREATE TABLE fences (resource VARBINARY(255) PRIMARY KEY, token BIGINT NOT NULL) ENGINE=MyISAM",
			first:  step{"r", 5}, then: step{"r", 4}, rollback: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openMySQL(t, nil)
			if _, err := db.ExecContext(ctx, tt.create); err != nil {
				t.Fatal(err)
			}
			g, err := token.NewGuard(token.MySQL, token.DefaultTable)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.CreateTable(ctx, db); !errors.Is(err, token.ErrInvalid) {
				t.Errorf("CreateTable = %v, want it refused", err)
			}
			// Used anyway, the table fences wrongly.
			err = inTx(ctx, db, nil, func(tx *sql.Tx) error {
				if err := g.Admit(ctx, tx, tt.first.resource, tt.first.token); err != nil {
					return err
				}
				if tt.rollback {
					return errRollBack
				}
				return nil
			})
			if err != nil && !(tt.rollback && err == errRollBack) {
				t.Fatalf("Admit(%q, %d) = %v", tt.first.resource, tt.first.token, err)
			}
			err = admit(ctx, db, g, tt.then.resource, tt.then.token)
			wrong := tt.wrong
			if wrong == nil {
				wrong = token.ErrStale
			}
			if !errors.Is(err, wrong) {
				t.Errorf("control: Admit(%q, %d) on the refused table = %v; want the wrong %v that the refusal prevents",
					tt.then.resource, tt.then.token, err, wrong)
			}
		})
	}
}

var errRollBack = errors.New("roll back")

// TestCreateTableConcurrentMySQL is token's
// TestCreateTableConcurrentPostgreSQL on a real MariaDB: replicas that start
// at once all call CreateTable on a table none of them has made yet, on a
// connection of their own or in a transaction run by Transact; every call
// must succeed, and the table then works.
func TestCreateTableConcurrentMySQL(t *testing.T) {
	db, _ := openMySQL(t, nil)
	const callers, rounds = 24, 4
	db.SetMaxOpenConns(callers)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := range rounds {
		g, err := token.NewGuard(token.MySQL, fmt.Sprintf("fences_%d", round))
		if err != nil {
			t.Fatal(err)
		}
		conns := make([]*sql.Conn, callers)
		for i := range conns {
			if conns[i], err = db.Conn(ctx); err != nil {
				t.Fatal(err)
			}
		}
		start := make(chan struct{})
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i, c := range conns {
			wg.Go(func() {
				defer c.Close()
				<-start
				if i%2 == 0 {
					errs[i] = g.CreateTable(ctx, c)
					return
				}
				errs[i] = token.Transact(ctx, c, nil, func(tx *sql.Tx) error {
					return g.CreateTable(ctx, tx)
				})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, caller %d (in a transaction: %v): CreateTable: %v", round, i, i%2 == 1, err)
			}
		}
		if err := token.Transact(ctx, db, nil, func(tx *sql.Tx) error { return g.Admit(ctx, tx, "r", 1) }); err != nil {
			t.Fatalf("round %d: Admit after the concurrent CreateTable calls: %v", round, err)
		}
	}
}
