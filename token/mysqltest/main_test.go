package mysqltest_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/picketlock/picket/internal/childtest"
)

// The MySQL server the tests use: .ci/mariadb starts one on 127.0.0.1 and
// sets these.
const (
	mysqlEnv        = "PICKET_TEST_MYSQL"    // its DSN (go-sql-driver)
	requireMySQLEnv = "PICKET_REQUIRE_MYSQL" // "1": fail, never skip, without it
)

// TestMain runs a proof's worker when asked (childtest), and otherwise the
// tests, skipping the Example functions when there is no MySQL (an example
// cannot skip itself), or failing instead if PICKET_REQUIRE_MYSQL=1.
func TestMain(m *testing.M) {
	if os.Getenv(childtest.Var) != "" {
		childtest.Main(m)
	}
	flag.Parse()
	if os.Getenv(mysqlEnv) == "" {
		if os.Getenv(requireMySQLEnv) == "1" {
			fmt.Fprintf(os.Stderr, "FAIL: %s=1 but %s is not set (run the tests under .ci/mariadb)\n", requireMySQLEnv, mysqlEnv)
			os.Exit(1)
		}
		if err := flag.Lookup("test.skip").Value.Set("^Example"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// params are DSN parameters for openMySQL.
type params map[string]string

// openMySQL returns a connection pool to a database of its own on the test
// server (dropped at cleanup), so tests never see each other's tables. It
// skips the test without a server, or fails it if PICKET_REQUIRE_MYSQL=1.
// It returns the database's name too.
func openMySQL(tb testing.TB, p params) (*sql.DB, string) {
	tb.Helper()
	dsn := os.Getenv(mysqlEnv)
	if dsn == "" {
		if os.Getenv(requireMySQLEnv) == "1" {
			tb.Fatalf("%s=1 but %s is not set", requireMySQLEnv, mysqlEnv)
		}
		tb.Skipf("%s is not set (run the tests under .ci/mariadb)", mysqlEnv)
	}
	db, name, drop, err := openDatabase(dsn, p)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := drop(); err != nil {
			tb.Error(err)
		}
	})
	return db, name
}

// openDatabase creates a new database and opens a pool on it; drop closes
// the pool and drops the database.
func openDatabase(dsn string, p params) (db *sql.DB, name string, drop func() error, err error) {
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, "", nil, err
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, "", nil, err
	}
	name = "t_" + strings.ToLower(rand.Text()[:12])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return nil, "", nil, fmt.Errorf("create database: %w", err)
	}
	cfg.DBName = name
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	for k, v := range p {
		switch k {
		case "clientFoundRows":
			cfg.ClientFoundRows = v == "true"
		default:
			cfg.Params[k] = v // a system variable for every session
		}
	}
	db, err = sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		admin.Close()
		return nil, "", nil, err
	}
	db.SetMaxOpenConns(20)
	return db, name, func() error {
		db.Close()
		defer admin.Close()
		_, err := admin.ExecContext(ctx, "DROP DATABASE "+name)
		return err
	}, nil
}

// openMySQLExample is openMySQL for Example functions, which have no
// testing.TB.
func openMySQLExample(p params) (db *sql.DB, cleanup func(), err error) {
	db, _, drop, err := openDatabase(os.Getenv(mysqlEnv), p)
	if err != nil {
		return nil, nil, err
	}
	return db, func() { _ = drop() }, nil
}
