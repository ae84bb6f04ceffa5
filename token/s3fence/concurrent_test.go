package s3fence_test

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picketlock/picket/internal/fenceproof"
	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/s3fence"
)

// TestConcurrentWriters: 16 goroutines, each with a client of its own, take
// rising tokens and write them after a random delay, so that lower tokens
// often arrive after higher ones; 1,600 writes in all, a Delete among every
// ten. Checked: no write is admitted after a higher token's write was
// acknowledged (the interval rule of internal/fenceproof, on this process's
// monotonic clock), every refusal is ErrStale with a higher Highest, some
// were refused, and at the end the object holds the highest admitted
// token's data (or its tombstone).
func TestConcurrentWriters(t *testing.T) {
	b, srv := newGateway(t)
	ctx := t.Context()
	type write struct {
		tok        token.Token
		del        bool
		start, end time.Duration
	}
	var (
		next     atomic.Uint64
		mu       sync.Mutex
		admitted []write
		refused  int
		epoch    = time.Now()
		wg       sync.WaitGroup
	)
	for g := range 16 {
		cb := s3fence.Bucket{Client: newClient(srv.endpoint), Name: b.Name}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 100 {
				tok := token.Token(next.Add(1))
				del := rng.IntN(10) == 0
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
				start := time.Since(epoch)
				var err error
				if del {
					err = cb.Delete(ctx, "hot", tok)
				} else {
					err = cb.Put(ctx, "hot", tok, []byte(tok.String()))
				}
				end := time.Since(epoch)
				mu.Lock()
				var se *token.StaleError
				switch {
				case err == nil:
					admitted = append(admitted, write{tok, del, start, end})
				case errors.As(err, &se) && se.Highest > tok:
					refused++
				default:
					t.Errorf("token %d: %v", tok, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var top write
	var timed []fenceproof.Timed
	for _, w := range admitted {
		if w.tok > top.tok {
			top = w
		}
		timed = append(timed, fenceproof.Timed{Token: w.tok, Start: w.start, End: w.end})
	}
	if late := fenceproof.Overtaken(timed); len(late) > 0 {
		t.Fatalf("%d writes admitted after a higher token was acknowledged: %v", len(late), late)
	}
	if refused == 0 {
		t.Fatalf("no write of %d was refused: the test did not race", len(admitted))
	}
	data, tok, err := b.Get(ctx, "hot")
	switch {
	case top.del && (!errors.Is(err, s3fence.ErrNotFound) || tok != top.tok):
		t.Fatalf("Get = %d, %v; want token %d's tombstone", tok, err, top.tok)
	case !top.del && (err != nil || tok != top.tok || string(data) != top.tok.String()):
		t.Fatalf("Get = %q, %d, %v; want token %d's data", data, tok, err, top.tok)
	}
	t.Logf("%d admitted, %d refused as stale; highest %d", len(admitted), refused, top.tok)
}

// TestServerConditionalPutAtomic is the server's half of the fence, shown
// on versitygw without this package: 16 clients read one ETag and all send
// a PutObject with If-Match on it at once; exactly one may succeed and
// every other must be refused with 412 (or 409). The same for
// If-None-Match: * on a key with no object. 50 rounds of each.
func TestServerConditionalPutAtomic(t *testing.T) {
	_, srv := newGateway(t)
	ctx := t.Context()
	clients := make([]*s3.Client, 16)
	for i := range clients {
		clients[i] = newClient(srv.endpoint)
	}
	phase := 0
	race := func(key string, ifMatch, ifNoneMatch *string) (won, lost int) {
		// Every body differs from every other, and so does every ETag (the
		// body's MD5): a writer whose body equalled the object's would
		// keep its ETag, and the next If-Match on it would rightly pass.
		phase++
		t.Helper()
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			mu    sync.Mutex
		)
		for i, c := range clients {
			wg.Go(func() {
				<-start
				_, err := c.PutObject(ctx, &s3.PutObjectInput{
					Bucket: aws.String(bucketName), Key: aws.String(key),
					Body:    strings.NewReader(fmt.Sprintf("phase %d, writer %d", phase, i)),
					IfMatch: ifMatch, IfNoneMatch: ifNoneMatch,
				})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case strings.Contains(err.Error(), "PreconditionFailed") || strings.Contains(err.Error(), "ConditionalRequestConflict"):
					lost++
				default:
					t.Errorf("writer %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		return won, lost
	}
	for round := range 50 {
		key := fmt.Sprintf("k%d", round)
		if won, lost := race(key, nil, aws.String("*")); won != 1 || lost != len(clients)-1 {
			t.Fatalf("round %d, If-None-Match: *: %d writes succeeded, %d refused; want 1 and %d", round, won, lost, len(clients)-1)
		}
		if won, lost := race(key, nil, nil); won != len(clients) || lost != 0 {
			t.Fatalf("round %d, unconditional: %d of %d succeeded", round, won, len(clients))
		}
		h, err := clients[0].HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucketName), Key: aws.String(key)})
		must(t, err)
		if won, lost := race(key, h.ETag, nil); won != 1 || lost != len(clients)-1 {
			t.Fatalf("round %d, If-Match %s: %d writes succeeded, %d refused; want 1 and %d", round, *h.ETag, won, lost, len(clients)-1)
		}
	}
}

// TestServerReadsTorn: what the fence may and may not trust of versitygw's
// reads while a writer replaces one object as fast as it can (each
// version's body is "picket-token N\n", its metadata N, its ETag the body's
// MD5, so an ETag names its version). A ranged GET's body must never be
// older than its ETag: the token read from it is at least the version's
// the conditional write then names, which is what the helpers rely on
// (doc.go). A HEAD's metadata may pair with another version's ETag: the
// count is logged, not asserted (a fixed server is no failure), and it is
// why the token is read from the body, not from a HEAD.
func TestServerReadsTorn(t *testing.T) {
	_, srv := newGateway(t)
	ctx := t.Context()
	w := newClient(srv.endpoint)
	var (
		names   sync.Map // ETag (MD5 hex) -> token
		written atomic.Uint64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	put := func(n uint64) {
		body := fmt.Sprintf("picket-token %d\n", n)
		sum := md5.Sum([]byte(body))
		names.Store(hex.EncodeToString(sum[:]), n)
		_, err := w.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucketName), Key: aws.String("torn"),
			Body: strings.NewReader(body), Metadata: map[string]string{s3fence.TokenKey: fmt.Sprint(n)},
		})
		if err != nil {
			t.Error(err)
		}
		written.Store(n)
	}
	put(1)
	wg.Go(func() {
		for n := uint64(2); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			put(n)
		}
	})
	version := func(etag *string) uint64 {
		v, ok := names.Load(strings.Trim(aws.ToString(etag), `"`))
		if !ok {
			t.Errorf("ETag %s names no version written", aws.ToString(etag))
			return 0
		}
		return v.(uint64)
	}
	var gets, getsNewer, getsOlder, heads, headsTorn atomic.Int64
	deadline := time.Now().Add(3 * time.Second)
	for range 4 {
		r := newClient(srv.endpoint)
		wg.Go(func() {
			for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
				g, err := r.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucketName), Key: aws.String("torn"), Range: aws.String("bytes=0-63")})
				if err != nil {
					t.Error(err)
					return
				}
				body, err := io.ReadAll(g.Body)
				g.Body.Close()
				if err != nil {
					t.Error(err)
					return
				}
				var n uint64
				fmt.Sscanf(string(body), "picket-token %d\n", &n)
				gets.Add(1)
				switch v := version(g.ETag); {
				case n < v:
					getsOlder.Add(1)
				case n > v:
					getsNewer.Add(1)
				}
				h, err := r.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucketName), Key: aws.String("torn")})
				if err != nil {
					t.Error(err)
					return
				}
				var m uint64
				fmt.Sscan(h.Metadata[s3fence.TokenKey], &m)
				heads.Add(1)
				if m != version(h.ETag) {
					headsTorn.Add(1)
				}
			}
		})
	}
	time.Sleep(time.Until(deadline))
	close(stop)
	wg.Wait()
	t.Logf("%d versions written; %d ranged GETs: %d with a body newer than their ETag, %d older; %d HEADs: %d torn (metadata of another version than the ETag's)",
		written.Load(), gets.Load(), getsNewer.Load(), getsOlder.Load(), heads.Load(), headsTorn.Load())
	if getsOlder.Load() != 0 {
		t.Fatalf("%d GETs answered a body older than their ETag: a token read from the body could pair with a newer version's ETag and let a stale write through", getsOlder.Load())
	}
}
