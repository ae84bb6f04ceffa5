package s3fence_test

import (
	"context"
	"os"
	"testing"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/s3fence"
)

// TestS3Proof is the SIGSTOP proof (internal/fenceproof) on a real
// versitygw: worker processes holding one picket lease write one object
// with Bucket.Put while holders are frozen past their TTL and thawed; no
// late write may land after a newer holder's. Its control: the mutant
// s3-no-compare (the token is not compared). The mutants that drop the
// conditional write or read the token from a HEAD leave a window too
// narrow for these runs to hit; TestLostRaceRetried and TestTokenFromBody
// catch them.
func TestS3Proof(t *testing.T) {
	_, srv := newGateway(t)
	fenceproof.Check(t, fenceproof.Run(t, fenceproof.Plan{Child: "s3-proof", Env: []string{proofEndpoint + "=" + srv.endpoint}}))
}

const proofEndpoint = "PICKET_TEST_S3_ENDPOINT"

func init() {
	childtest.Register("s3-proof", func() int {
		b := s3fence.Bucket{Client: newClient(os.Getenv(proofEndpoint)), Name: bucketName}
		return fenceproof.Worker(func(ctx context.Context, t token.Token, value string) error {
			return b.Put(ctx, "proof", t, []byte(value))
		})
	})
}
