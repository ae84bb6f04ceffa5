package peers

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/picketlock/picket/lease"
)

// postgresSchema makes the lease table and the counter row. Tokens come
// from the counter row, bumped in the acquire statement itself, so a token
// is spent and the lease written in one transaction.
const postgresSchema = `
CREATE TABLE IF NOT EXISTS picket_peers_leases (
	name    text PRIMARY KEY,
	holder  text NOT NULL,
	token   bigint NOT NULL,
	expires timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS picket_peers_counter (
	id    int PRIMARY KEY CHECK (id = 1),
	token bigint NOT NULL
);
INSERT INTO picket_peers_counter VALUES (1, 0) ON CONFLICT (id) DO NOTHING;`

// postgresAcquire grants the name if it is free or expired, in one
// statement; no row comes back when it is held. The CTE bumps the counter
// even then: a held name spends a token, which only leaves a gap.
const postgresAcquire = `
WITH c AS (UPDATE picket_peers_counter SET token = token + 1 WHERE id = 1 RETURNING token)
INSERT INTO picket_peers_leases AS l (name, holder, token, expires)
SELECT $1, $2, c.token, now() + $3 * interval '1 millisecond' FROM c
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires = excluded.expires
WHERE l.expires <= now()
RETURNING l.token`

// postgresRelease deletes the live lease of that holder and token.
const postgresRelease = `
DELETE FROM picket_peers_leases WHERE name = $1 AND holder = $2 AND token = $3 AND expires > now()`

// PostgresTarget measures the PostgreSQL server at dsn with
// synchronous_commit on (durable) or off. A durable run refuses a server
// whose fsync is off.
func PostgresTarget(dsn string, syncCommit bool) Target {
	t := Target{Name: "postgres-sync-on", Durable: true,
		Durability: "durable: synchronous_commit on (WAL fsync before the reply)",
		Short:      "durable: synchronous_commit on"}
	setting := "on"
	if !syncCommit {
		setting = "off"
		t = Target{Name: "postgres-sync-off",
			Durability: "NOT durable: synchronous_commit off (the last commits are lost on a crash; tokens can repeat)",
			Short:      "NOT durable: synchronous_commit off"}
	}
	t.Open = func(ctx context.Context, clients int) (lease.Store, string, func() error, error) {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, "", nil, fmt.Errorf("postgres: %w", err)
		}
		cfg.MaxConns = int32(clients + 2)
		cfg.MinConns = int32(clients)
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = setting
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, "", nil, fmt.Errorf("postgres: %w", err)
		}
		fail := func(err error) (lease.Store, string, func() error, error) {
			pool.Close()
			return nil, "", nil, fmt.Errorf("postgres: %w", err)
		}
		if _, err := pool.Exec(ctx, postgresSchema); err != nil {
			return fail(err)
		}
		// Open every client's connection now, so that no step measures
		// connection setup.
		conns := make([]*pgxpool.Conn, 0, clients)
		for range clients {
			c, err := pool.Acquire(ctx)
			if err != nil {
				for _, c := range conns {
					c.Release()
				}
				return fail(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Release()
		}
		var version, fsync, sc string
		err = pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&version, &fsync, &sc)
		if err != nil {
			return fail(err)
		}
		if sc != setting {
			return fail(fmt.Errorf("synchronous_commit is %s, not %s", sc, setting))
		}
		if t.Durable && fsync != "on" {
			return fail(fmt.Errorf("fsync is %s on this server: its rows would not be durable", fsync))
		}
		return &postgresStore{pool: pool}, "PostgreSQL " + version, func() error { pool.Close(); return nil }, nil
	}
	return t
}

// postgresStore is a lease.Store on PostgreSQL for the workloads' Acquire
// and Release.
type postgresStore struct {
	unsupported
	pool *pgxpool.Pool
}

func (s *postgresStore) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	ttl := req.TTL.Milliseconds()
	return pollAcquire(ctx, req, func(ctx context.Context) (lease.Grant, bool, error) {
		var tok int64
		err := s.pool.QueryRow(ctx, postgresAcquire, req.Name, req.Holder, ttl).Scan(&tok)
		if errors.Is(err, pgx.ErrNoRows) {
			return lease.Grant{}, false, nil
		}
		if err != nil {
			return lease.Grant{}, false, fmt.Errorf("postgres acquire: %w", err)
		}
		g, err := grant(req, tok)
		return g, true, err
	})
}

func (s *postgresStore) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder, tok := req.Name, req.Holder, req.Token
	tag, err := s.pool.Exec(ctx, postgresRelease, name, holder, int64(tok))
	if err != nil {
		return fmt.Errorf("postgres release: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("release %q: %w", name, lease.ErrLost)
	}
	return nil
}
