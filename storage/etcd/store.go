package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/picketlock/picket/lease"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Store is a lease.Store and a fenced key-value store on an etcd cluster.
// It is safe for concurrent use; many Stores (in many processes, on many
// machines) may share one cluster and one prefix.
type Store struct {
	cfg    config
	client *clientv3.Client
	kv     pb.KVClient // the grant path's transactions (txn.go)
	keys   keys

	seen    sightings     // observe.go
	boot    lease.Clock   // bootNow's clock (observe.go)
	sess    session       // the etcd lease of this store's queue keys (wait.go)
	id      string        // names this store's queue keys
	waiters atomic.Uint64 // numbers them (new slots: grants.go)
	grants  grantNotes    // grants.go
	slots   slots         // grants.go
	floor   floorCache    // floor.go

	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // background work: the sweep, the session, deletes
}

var (
	_ lease.Store         = (*Store)(nil)
	_ lease.KV            = (*Store)(nil)
	_ lease.HealthChecker = (*Store)(nil)
	_ lease.StatsReporter = (*Store)(nil)
	_ lease.WaitCounter   = (*Store)(nil)
)

// Open connects to the etcd cluster whose client URLs are endpoints
// ("http://127.0.0.1:2379", ...). The connection is made in the background:
// Open does not wait for the cluster, and a cluster that cannot be reached
// shows as lease.ErrUnavailable on the first request and in Health.
//
// Errors: lease.ErrInvalid for bad options or no endpoint, or the client's
// error (an unreadable TLS file, for instance).
func Open(endpoints []string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, invalidf("no endpoint")
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          cfg.dialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		TLS:                  tlsCfg,
		Username:             cfg.username,
		Password:             cfg.password,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect to %v: %w", endpoints, err)
	}
	s := &Store{
		cfg:     cfg,
		client:  client,
		kv:      clientv3.RetryKVClient(client),
		keys:    keys{prefix: cfg.prefix + "/"},
		boot:    lease.SuspendClock(),
		id:      storeID(),
		closing: make(chan struct{}),
	}
	s.wg.Go(s.sweep)
	return s, nil
}

// Close stops the background work and closes the connection. Leases stay in
// the cluster: they are kept or expire there, whoever holds them.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closing)
		s.wg.Wait()
		err = s.client.Close()
	})
	return err
}

// Prefix returns the key prefix, without its trailing "/".
func (s *Store) Prefix() string { return s.cfg.prefix }

// Health returns nil when the cluster has a leader and a quorum answers a
// linearizable read, and an error matching lease.ErrUnavailable otherwise.
func (s *Store) Health(ctx context.Context) error {
	if s.closed() {
		return ErrClosed
	}
	rctx, cancel := s.rpc(ctx)
	defer cancel()
	_, err := s.client.Get(rctx, s.keys.health(), clientv3.WithCountOnly())
	return failed(ctx, "health", s.cfg.prefix, false, err)
}

func (s *Store) closed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// rpc returns the context of one request: bounded by the request timeout,
// and failing at once on a member that has no leader.
func (s *Store) rpc(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout)
	return clientv3.WithRequireLeader(ctx), cancel
}

// storeID returns a random name for a store's queue keys.
func storeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return hex.EncodeToString(b[:])
}

// keys names the keys of one prefix. Names cannot contain NUL (they refuse
// control characters), so NUL separates a name from what follows it.
type keys struct{ prefix string }

func (k keys) lease(name string) string { return k.prefix + "leases/" + name }
func (k keys) leases() string           { return k.prefix + "leases/" }
func (k keys) queue(name string) string { return k.prefix + "queue/" + name + "\x00" }
func (k keys) kv(key string) string     { return k.prefix + "kv/" + key }
func (k keys) health() string           { return k.prefix + "health" }
func (k keys) kvUsage() string          { return k.prefix + "kvusage" }
