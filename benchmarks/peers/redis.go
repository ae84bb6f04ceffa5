package peers

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/picketlock/picket/lease"
)

// The usual Redis lock with a fencing counter: the lease and the token in
// one script, so that no token is spent on a held name.
var (
	redisAcquire = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0`)
	redisRelease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
)

// redisCounter is the key of the token counter.
const redisCounter = "picket-peers/token"

// RedisTarget measures the Redis server at addr with appendfsync set to
// fsync ("always" or "everysec"): appendonly is turned on and the setting
// is read back before the run.
func RedisTarget(addr, fsync string) Target {
	t := Target{
		Name:    "redis-" + fsync,
		Durable: fsync == "always",
	}
	if t.Durable {
		t.Durability = "durable: AOF, appendfsync always (fsync before the reply)"
		t.Short = "durable: appendfsync always"
	} else {
		t.Durability = "NOT durable: AOF, appendfsync " + fsync + " (about 1 s of grants lost on power loss; tokens can repeat)"
		t.Short = "NOT durable: appendfsync " + fsync
	}
	t.Open = func(ctx context.Context, clients int) (lease.Store, string, func() error, error) {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: clients + 4, MinIdleConns: clients})
		for _, kv := range [][2]string{{"appendonly", "yes"}, {"appendfsync", fsync}} {
			if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				c.Close()
				return nil, "", nil, fmt.Errorf("redis %s: config set %s %s: %w", addr, kv[0], kv[1], err)
			}
			got, err := c.ConfigGet(ctx, kv[0]).Result()
			if err != nil || got[kv[0]] != kv[1] {
				c.Close()
				return nil, "", nil, fmt.Errorf("redis %s: %s is %q, not %q (%v)", addr, kv[0], got[kv[0]], kv[1], err)
			}
		}
		for _, s := range []*redis.Script{redisAcquire, redisRelease} {
			if err := s.Load(ctx, c).Err(); err != nil {
				c.Close()
				return nil, "", nil, fmt.Errorf("redis %s: script load: %w", addr, err)
			}
		}
		if err := warm(ctx, clients, func(ctx context.Context) error { return c.Ping(ctx).Err() }); err != nil {
			c.Close()
			return nil, "", nil, fmt.Errorf("redis %s: %w", addr, err)
		}
		version := "Redis"
		if info, err := c.InfoMap(ctx, "server").Result(); err == nil {
			version += " " + info["Server"]["redis_version"]
		}
		return &redisStore{c: c}, version, c.Close, nil
	}
	return t
}

// redisStore is a lease.Store on Redis for the workloads' Acquire and
// Release.
type redisStore struct {
	unsupported
	c *redis.Client
}

func (s *redisStore) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	ttl := req.TTL.Milliseconds()
	return pollAcquire(ctx, req, func(ctx context.Context) (lease.Grant, bool, error) {
		tok, err := redisAcquire.EvalSha(ctx, s.c, []string{req.Name, redisCounter}, req.Holder, ttl).Int64()
		if err != nil {
			return lease.Grant{}, false, redisErr("acquire", err)
		}
		if tok == 0 {
			return lease.Grant{}, false, nil
		}
		g, err := grant(req, tok)
		return g, true, err
	})
}

func (s *redisStore) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder := req.Name, req.Holder
	n, err := redisRelease.EvalSha(ctx, s.c, []string{name}, holder).Int64()
	if err != nil {
		return redisErr("release", err)
	}
	if n == 0 {
		return fmt.Errorf("release %q: %w", name, lease.ErrLost)
	}
	return nil
}

func redisErr(op string, err error) error { return fmt.Errorf("redis %s: %w", op, err) }
