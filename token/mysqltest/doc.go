// Package mysqltest holds the tests and Example functions of token's MySQL
// dialect (token.Guard, token.Rows, token.CheckUpdate and token.Transact on
// MySQL and MariaDB) against a real server, and their SIGSTOP proof. It has
// no code of its own.
//
// It is a module of its own so that the MySQL driver its tests use
// (github.com/go-sql-driver/mysql) stays out of the library module's graph:
// package token imports no driver, and a program that fences PostgreSQL or
// SQLite gets none of MySQL's.
//
// The tests need a server: .ci/mariadb starts one on 127.0.0.1 and sets
// PICKET_TEST_MYSQL (a go-sql-driver DSN) and PICKET_REQUIRE_MYSQL=1, under
// which a test that cannot reach it fails rather than skips:
//
//	.ci/mariadb go -C token/mysqltest test -race ./
package mysqltest
