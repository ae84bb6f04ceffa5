// Command sample is what a library user writes: a job that takes a lease on
// an embedded SQLite file and fences its writes in PostgreSQL through pgx.
// It exists for .ci/modules, which checks that such a program's module
// graph (go list -m all) stays small and free of etcd, gRPC and
// OpenTelemetry: the library module must require only what its packages and
// their tests need.
package main

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"os"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
	"github.com/picketlock/picket/token"
)

func main() {
	ctx := context.Background()
	store, err := sqlite.Open("picket.db")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	m, err := lease.NewManager(store)
	if err != nil {
		log.Fatal(err)
	}
	l, err := m.TryAcquire(ctx, "reports/daily", 30*time.Second)
	if errors.Is(err, lease.ErrHeld) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)

	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	guard, err := token.NewGuard(token.PostgreSQL, token.DefaultTable)
	if err != nil {
		log.Fatal(err)
	}
	if err := guard.CreateTable(ctx, db); err != nil {
		log.Fatal(err)
	}
	err = token.Transact(ctx, db, nil, func(tx *sql.Tx) error {
		return guard.Admit(ctx, tx, "reports/daily", l.Token())
	})
	if l.Fenced(err) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
}
