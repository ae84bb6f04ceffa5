package redisfence_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/redisfence"
)

// TestRedisProof is the SIGSTOP proof (internal/fenceproof) on a real
// redis-server: worker processes holding one picket lease write one key
// with redisfence.Set while holders are frozen past their TTL and thawed;
// no late write may land after a newer holder's. Its control: the mutant
// redis-no-compare (the script writes without comparing).
func TestRedisProof(t *testing.T) {
	_, srv := newRedis(t)
	fenceproof.Check(t, fenceproof.Run(t, fenceproof.Plan{Child: "redis-proof", Env: []string{proofAddr + "=" + srv.addr}}))
}

const proofAddr = "PICKET_TEST_REDIS_ADDR"

func init() {
	childtest.Register("redis-proof", func() int {
		c := redis.NewClient(&redis.Options{Addr: os.Getenv(proofAddr)})
		return fenceproof.Worker(func(ctx context.Context, t token.Token, value string) error {
			return redisfence.Set(ctx, c, "proof", t, value)
		})
	})
}
