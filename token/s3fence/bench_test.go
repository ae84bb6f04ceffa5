package s3fence_test

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/s3fence"
)

// BenchmarkWriteS3: what the fence costs per write on a real versitygw
// (POSIX backend, loopback): Bucket.Put (a ranged GET for the token and
// ETag, then the conditional PutObject) against a plain PutObject of the
// same size of body and metadata. The README's "Where your data lives" quotes
// fenced/unfenced.
//
//	go -C token/s3fence test -run '^$' -bench . .
func BenchmarkWriteS3(b *testing.B) {
	bk, _ := newGateway(b)
	ctx := b.Context()
	data := bytes.Repeat([]byte("v"), 1024)
	body := append([]byte("picket-token 1\n"), data...)
	b.Run("unfenced", func(b *testing.B) {
		for b.Loop() {
			_, err := bk.Client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bk.Name), Key: aws.String("bench-plain"), Body: bytes.NewReader(body),
				Metadata: map[string]string{s3fence.TokenKey: "1"},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	t := token.Token(0)
	b.Run("fenced", func(b *testing.B) {
		for b.Loop() {
			t++
			if err := bk.Put(ctx, "bench", t, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
