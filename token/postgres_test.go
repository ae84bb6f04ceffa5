package token_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver (tests only)

	"github.com/picketlock/picket/internal/childtest"
)

// The PostgreSQL server the tests use: .ci/postgres starts one on 127.0.0.1
// and sets these.
const (
	postgresEnv        = "PICKET_TEST_POSTGRES"    // its DSN
	requirePostgresEnv = "PICKET_REQUIRE_POSTGRES" // "1": fail, never skip, without it
)

// postgresExamples matches the Example tests that need PostgreSQL.
const postgresExamples = `^Example.*_postgreSQL$`

// TestMain skips the PostgreSQL examples when there is no PostgreSQL (an
// example cannot skip itself), and fails instead if PICKET_REQUIRE_POSTGRES=1.
func TestMain(m *testing.M) {
	if name := os.Getenv(childtest.Var); name != "" { // a worker of TestPostgreSQLProof
		os.Exit(childtest.Run(name))
	}
	flag.Parse()
	if os.Getenv(postgresEnv) == "" {
		if os.Getenv(requirePostgresEnv) == "1" {
			fmt.Fprintf(os.Stderr, "FAIL: %s=1 but %s is not set (run the tests under .ci/postgres)\n", requirePostgresEnv, postgresEnv)
			os.Exit(1)
		}
		skip := flag.Lookup("test.skip")
		pattern := postgresExamples
		if old := skip.Value.String(); old != "" {
			pattern = old + "|" + pattern
		}
		if err := skip.Value.Set(pattern); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if testing.Verbose() {
			fmt.Printf("token: %s is not set: skipping the PostgreSQL examples (%s)\n", postgresEnv, postgresExamples)
		}
	}
	os.Exit(m.Run())
}

// openPostgres returns a connection pool to a schema of its own on the test
// PostgreSQL server (dropped at cleanup), so tests never see each other's
// tables. It skips the test without a server, or fails it if
// PICKET_REQUIRE_POSTGRES=1.
func openPostgres(tb testing.TB) *sql.DB {
	tb.Helper()
	db, _ := openPostgresDSN(tb)
	return db
}

// openPostgresDSN is openPostgres that also returns the DSN of the pool's
// schema, for a child process.
func openPostgresDSN(tb testing.TB) (*sql.DB, string) {
	tb.Helper()
	dsn := os.Getenv(postgresEnv)
	if dsn == "" {
		if os.Getenv(requirePostgresEnv) == "1" {
			tb.Fatalf("%s=1 but %s is not set", requirePostgresEnv, postgresEnv)
		}
		tb.Skipf("%s is not set (run the tests under .ci/postgres)", postgresEnv)
	}
	db, schemaDSN, drop, err := openPostgresSchema(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := drop(); err != nil {
			tb.Error(err)
		}
	})
	return db, schemaDSN
}

// openPostgresSchema creates a new schema and opens a pool whose search_path
// is that schema (its DSN: schemaDSN); drop closes the pool and drops the
// schema.
func openPostgresSchema(dsn string) (db *sql.DB, schemaDSN string, drop func() error, err error) {
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, "", nil, err
	}
	schema := "t_" + rand.Text()[:12]
	for i := range schema {
		if c := schema[i]; c >= 'A' && c <= 'Z' {
			schema = schema[:i] + string(c+'a'-'A') + schema[i+1:]
		}
	}
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close()
		return nil, "", nil, fmt.Errorf("create schema: %w", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		admin.Close()
		return nil, "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err = sql.Open("pgx", u.String())
	if err != nil {
		admin.Close()
		return nil, "", nil, err
	}
	db.SetMaxOpenConns(20)
	return db, u.String(), func() error {
		db.Close()
		defer admin.Close()
		_, err := admin.ExecContext(ctx, `DROP SCHEMA `+schema+` CASCADE`)
		return err
	}, nil
}

// openPostgresExample is openPostgres for Example functions, which have no
// testing.TB.
func openPostgresExample() (db *sql.DB, cleanup func(), err error) {
	db, _, drop, err := openPostgresSchema(os.Getenv(postgresEnv))
	if err != nil {
		return nil, nil, err
	}
	return db, func() { _ = drop() }, nil
}
