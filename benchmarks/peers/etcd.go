package peers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/picketlock/picket/lease"
)

// etcdPrefix starts the keys of every mutex the suite takes.
const etcdPrefix = "picket-peers/"

// EtcdTarget measures the etcd cluster at endpoints (one member or three)
// with concurrency.Session and concurrency.Mutex. label names the cluster in
// the table ("etcd-1", "etcd-3").
func EtcdTarget(label string, endpoints []string) Target {
	members, short := "1 member", "durable: raft fsync, 1 member"
	if n := len(endpoints); n > 1 {
		members = fmt.Sprintf("%d members, a majority fsyncs", n)
		short = fmt.Sprintf("durable: raft fsync, majority of %d", n)
	}
	return Target{
		Name:       label,
		Durable:    true,
		Durability: "durable: raft log fsync before the reply (" + members + ", all on this machine's disk)",
		Short:      short,
		Open: func(ctx context.Context, clients int) (lease.Store, string, func() error, error) {
			// The client's own log (a warning for each call the end of a
			// step cancels) would drown the progress lines.
			c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				return nil, "", nil, fmt.Errorf("etcd %v: %w", endpoints, err)
			}
			version := "etcd"
			st, err := c.Status(ctx, endpoints[0])
			if err != nil {
				c.Close()
				return nil, "", nil, fmt.Errorf("etcd %v: status: %w", endpoints, err)
			}
			version += " " + st.Version
			s := &etcdStore{c: c, sessions: map[string]*concurrency.Session{}}
			return s, version, s.close, nil
		},
	}
}

// etcdStore is a lease.Store on etcd for the workloads' Acquire and
// Release: one Session (an etcd lease kept alive) per holder, one Mutex per
// name, the token the create revision of the mutex's key.
type etcdStore struct {
	unsupported
	c *clientv3.Client

	mu       sync.Mutex
	sessions map[string]*concurrency.Session // by holder
	held     sync.Map                        // holder + "\x00" + name → *concurrency.Mutex
}

// session returns holder's session, made on its first acquire with a TTL of
// ttl rounded up to whole seconds.
func (s *etcdStore) session(holder string, ttl time.Duration) (*concurrency.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[holder]; ok {
		return ss, nil
	}
	secs := int((ttl + time.Second - 1) / time.Second)
	ss, err := concurrency.NewSession(s.c, concurrency.WithTTL(secs))
	if err != nil {
		return nil, fmt.Errorf("etcd session: %w", err)
	}
	s.sessions[holder] = ss
	return ss, nil
}

func (s *etcdStore) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	ss, err := s.session(req.Holder, req.TTL)
	if err != nil {
		return lease.Grant{}, err
	}
	m := concurrency.NewMutex(ss, etcdPrefix+req.Name)
	if req.Wait <= 0 {
		err = m.TryLock(ctx)
	} else {
		wctx, cancel := context.WithTimeout(ctx, req.Wait)
		err = m.Lock(wctx)
		cancel()
		if err != nil && ctx.Err() == nil && wctx.Err() != nil {
			err = concurrency.ErrLocked // the wait ran out
		}
	}
	switch {
	case errors.Is(err, concurrency.ErrLocked):
		return lease.Grant{}, &lease.HeldError{Name: req.Name}
	case err != nil:
		return lease.Grant{}, fmt.Errorf("etcd lock %q: %w", req.Name, err)
	}
	own := m.IsOwner()
	s.held.Store(req.Holder+"\x00"+req.Name, m)
	return grant(req, own.GetCompare().GetCreateRevision())
}

func (s *etcdStore) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder := req.Name, req.Holder
	m, ok := s.held.LoadAndDelete(holder + "\x00" + name)
	if !ok {
		return fmt.Errorf("release %q: %w", name, lease.ErrLost)
	}
	if err := m.(*concurrency.Mutex).Unlock(ctx); err != nil {
		return fmt.Errorf("etcd unlock %q: %w", name, err)
	}
	return nil
}

// close ends every session (revoking its lease, so its keys go) and the
// client.
func (s *etcdStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, ss := range s.sessions {
		errs = append(errs, ss.Close())
	}
	errs = append(errs, s.c.Close())
	return errors.Join(errs...)
}

// SplitEndpoints reads a comma-separated list of etcd client URLs.
func SplitEndpoints(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
