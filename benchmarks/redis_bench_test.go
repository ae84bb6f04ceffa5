package benchmarks_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
)

// The Redis lock with a fencing counter: SET NX PX and INCR in one script,
// and a release that deletes the key only for its holder.
const (
	redisAcquire = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return 0`
	redisRelease = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
)

// BenchmarkRedis is the Redis baseline: acquire+release cycles and fresh
// grants on distinct keys, as in BenchmarkGrants, against the Redis server
// at PICKET_BENCH_REDIS (host:port); skipped when it is not set. Run that
// server with appendonly yes and appendfsync always, so that every
// acknowledged write is on disk, as every picket grant is.
func BenchmarkRedis(b *testing.B) {
	addr := os.Getenv("PICKET_BENCH_REDIS")
	if addr == "" {
		b.Skip("set PICKET_BENCH_REDIS=host:port of a Redis server with appendfsync always")
	}
	rc, err := dialRESP(addr)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	if v, err := rc.do("CONFIG", "GET", "appendfsync"); err != nil {
		b.Fatal(err)
	} else {
		b.Logf("redis at %s: appendfsync %v", addr, v)
	}
	sha := map[string]string{}
	for _, s := range []string{redisAcquire, redisRelease} {
		v, err := rc.do("SCRIPT", "LOAD", s)
		if err != nil {
			b.Fatal(err)
		}
		sha[s], _ = v.(string)
	}
	ttl := strconv.FormatInt(benchTTL.Milliseconds(), 10)
	run := "run" + lease.NewHolder()[:8]
	for _, fresh := range []bool{false, true} {
		name, unit := bench.Distinct, "cycles"
		if fresh {
			name, unit = bench.Fresh, "grants"
		}
		b.Run("names="+name, func(b *testing.B) {
			for _, n := range clientCounts(b) {
				b.Run(clientsName(n), func(b *testing.B) {
					round := lease.NewHolder()[:8] // new keys in every round
					parallel(b, n, unit, func(i int, h *bench.Histogram, next func() bool) {
						c, err := dialRESP(addr)
						if err != nil {
							b.Error(err)
							return
						}
						defer c.Close()
						holder := lease.NewHolder()
						key := run + ":" + round + ":" + strconv.Itoa(i)
						for k := 0; next(); k++ {
							if fresh {
								key = run + ":" + round + ":" + strconv.Itoa(i) + ":" + strconv.Itoa(k)
							}
							t0 := time.Now()
							tok, err := c.do("EVALSHA", sha[redisAcquire], "2", key, run+":counter", holder, ttl)
							if err != nil || tok == int64(0) {
								b.Errorf("acquire %s: %v, %v", key, tok, err)
								return
							}
							h.Record(time.Since(t0))
							if fresh {
								continue
							}
							if v, err := c.do("EVALSHA", sha[redisRelease], "1", key, holder); err != nil || v != int64(1) {
								b.Errorf("release %s: %v, %v", key, v, err)
								return
							}
						}
					})
				})
			}
		})
	}
}
