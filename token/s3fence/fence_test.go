package s3fence_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/s3fence"
)

// stale fails t unless err is a *token.StaleError of tok with highest.
func stale(t *testing.T, err error, tok, highest token.Token) {
	t.Helper()
	var se *token.StaleError
	if !errors.As(err, &se) || !errors.Is(err, token.ErrStale) || se.Token != tok || se.Highest != highest {
		t.Fatalf("got %v, want a *token.StaleError of token %d, highest %d", err, tok, highest)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// raw returns the object's body and its picket-token metadata as the store
// holds them, or "<none>".
func raw(t *testing.T, b s3fence.Bucket, key string) (string, string) {
	t.Helper()
	out, err := b.Client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return "<none>", ""
		}
		t.Fatal(err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	must(t, err)
	return string(body), out.Metadata[s3fence.TokenKey]
}

// get returns Get's data and token, failing t on an error.
func get(t *testing.T, b s3fence.Bucket, key string) (string, token.Token) {
	t.Helper()
	data, tok, err := b.Get(t.Context(), key)
	must(t, err)
	return string(data), tok
}

// TestPutGetDelete: the fenced writes on a real server, step by step: a
// first token, the same again, a higher one, a lower one (stale, with the
// highest, nothing written), a Delete that leaves a tombstone keeping the
// token, a lower Put after it still stale, a higher Put bringing the
// object back.
func TestPutGetDelete(t *testing.T) {
	b, _ := newGateway(t)
	ctx := t.Context()

	_, tok, err := b.Get(ctx, "jobs/1")
	if !errors.Is(err, s3fence.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) || tok != 0 {
		t.Fatalf("Get of a missing key: %d, %v; want 0, ErrNotFound", tok, err)
	}
	must(t, b.Put(ctx, "jobs/1", 5, []byte("from 5")))
	must(t, b.Put(ctx, "jobs/1", 5, []byte("from 5 again")))
	must(t, b.Put(ctx, "jobs/1", 7, []byte("from 7")))
	stale(t, b.Put(ctx, "jobs/1", 6, []byte("from 6")), 6, 7)
	if data, tok := get(t, b, "jobs/1"); data != "from 7" || tok != 7 {
		t.Fatalf("Get = %q, %d after a stale write; want \"from 7\", 7", data, tok)
	}
	if body, meta := raw(t, b, "jobs/1"); body != "picket-token 7\nfrom 7" || meta != "7" {
		t.Fatalf("the object holds %q with metadata picket-token %q", body, meta)
	}

	must(t, b.Delete(ctx, "jobs/1", 8))
	_, tok, err = b.Get(ctx, "jobs/1")
	if !errors.Is(err, s3fence.ErrNotFound) || tok != 8 {
		t.Fatalf("Get after Delete(8): %d, %v; want 8, ErrNotFound", tok, err)
	}
	stale(t, b.Put(ctx, "jobs/1", 7, []byte("from 7, late")), 7, 8)
	stale(t, b.Delete(ctx, "jobs/1", 3), 3, 8)
	if body, meta := raw(t, b, "jobs/1"); body != "picket-token 8 deleted\n" || meta != "8" {
		t.Fatalf("the tombstone holds %q with metadata picket-token %q", body, meta)
	}
	must(t, b.Delete(ctx, "jobs/1", 8)) // again, same holder
	must(t, b.Put(ctx, "jobs/1", 9, []byte("back")))
	if data, tok := get(t, b, "jobs/1"); data != "back" || tok != 9 {
		t.Fatalf("Get = %q, %d; want \"back\", 9", data, tok)
	}

	// A Delete of a key never written leaves a tombstone all the same.
	must(t, b.Delete(ctx, "jobs/2", 4))
	stale(t, b.Put(ctx, "jobs/2", 3, []byte("x")), 3, 4)
	// Empty data is data, not a tombstone; data holding newlines and a
	// "picket-token" line of its own is returned whole.
	must(t, b.Put(ctx, "jobs/3", 1, nil))
	if data, tok := get(t, b, "jobs/3"); data != "" || tok != 1 {
		t.Fatalf("Get = %q, %d; want \"\", 1", data, tok)
	}
	odd := "picket-token 99 deleted\nline 2\n"
	must(t, b.Put(ctx, "jobs/3", 2, []byte(odd)))
	if data, tok := get(t, b, "jobs/3"); data != odd || tok != 2 {
		t.Fatalf("Get = %q, %d; want %q, 2", data, tok, odd)
	}
	stale(t, b.Put(ctx, "jobs/3", 1, nil), 1, 2)
}

// TestBadInputWritesNothing: a zero token, one above token.Max, an empty,
// overlong or non-UTF-8 key, a Bucket without client or name: ErrInvalid,
// and the bucket holds no object afterwards.
func TestBadInputWritesNothing(t *testing.T) {
	b, _ := newGateway(t)
	ctx := t.Context()
	cases := []struct {
		name string
		err  error
	}{
		{"zero token", b.Put(ctx, "k", 0, []byte("v"))},
		{"token above Max", b.Put(ctx, "k", token.Max+1, []byte("v"))},
		{"delete, zero token", b.Delete(ctx, "k", 0)},
		{"delete, token above Max", b.Delete(ctx, "k", token.Max+1)},
		{"empty key", b.Put(ctx, "", 1, []byte("v"))},
		{"overlong key", b.Put(ctx, strings.Repeat("k", s3fence.MaxKey+1), 1, []byte("v"))},
		{"key not UTF-8", b.Delete(ctx, "k\xff", 1)},
		{"no client", s3fence.Bucket{Name: bucketName}.Put(ctx, "k", 1, []byte("v"))},
		{"no name", s3fence.Bucket{Client: b.Client}.Put(ctx, "k", 1, []byte("v"))},
		{"get, empty key", func() error { _, _, err := b.Get(ctx, ""); return err }()},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, token.ErrInvalid) || errors.Is(tc.err, token.ErrStale) {
			t.Errorf("%s: got %v, want an error matching token.ErrInvalid", tc.name, tc.err)
		}
	}
	if err := b.Put(ctx, "k", 0, nil); err != token.ErrZero {
		t.Errorf("zero token: %v, want token.ErrZero", err)
	}
	out, err := b.Client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name)})
	must(t, err)
	if len(out.Contents) != 0 {
		t.Fatalf("the bucket holds %d objects after bad input only", len(out.Contents))
	}
}

// TestUnfencedObjectRefused: an object this package did not write (a
// plain PutObject, an empty object) is never replaced or read: ErrUnfenced,
// not ErrStale, and the object is as it was.
func TestUnfencedObjectRefused(t *testing.T) {
	b, _ := newGateway(t)
	ctx := t.Context()
	for key, body := range map[string]string{"plain": "hello", "empty": "", "bad-token": "picket-token x\n", "no-newline": "picket-token 5"} {
		_, err := b.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key), Body: strings.NewReader(body)})
		must(t, err)
		for _, err := range []error{b.Put(ctx, key, 9, []byte("v")), b.Delete(ctx, key, 9), func() error { _, _, err := b.Get(ctx, key); return err }()} {
			if !errors.Is(err, s3fence.ErrUnfenced) || errors.Is(err, token.ErrStale) {
				t.Errorf("%s: got %v, want ErrUnfenced", key, err)
			}
		}
		if got, _ := raw(t, b, key); got != body {
			t.Errorf("%s: the object holds %q, want %q untouched", key, got, body)
		}
	}
}

// TestTokenFromBody: the token the fence compares with is the body's
// first line, not the metadata (which a torn HEAD can pair with another
// version's ETag: doc.go): an object whose body says 9 and whose metadata
// says 3 refuses token 5.
func TestTokenFromBody(t *testing.T) {
	b, _ := newGateway(t)
	ctx := t.Context()
	_, err := b.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.Name), Key: aws.String("k"),
		Body:     strings.NewReader("picket-token 9\nfrom 9"),
		Metadata: map[string]string{s3fence.TokenKey: "3"},
	})
	must(t, err)
	stale(t, b.Put(ctx, "k", 5, []byte("from 5")), 5, 9)
	if data, tok := get(t, b, "k"); data != "from 9" || tok != 9 {
		t.Fatalf("Get = %q, %d; want \"from 9\", 9", data, tok)
	}
}

// TestLostRaceRetried: another writer gets in between a Put's read and
// its conditional write (the race hook writes the object there). The
// store refuses the conditional write (412) and the Put reads again: it
// then lands over a lower token, ends in ErrStale under a higher one, and
// after Attempts lost races in a row gives up with ErrContended. The same
// for a key with no object yet (If-None-Match: *) and for Delete.
func TestLostRaceRetried(t *testing.T) {
	b, _ := newGateway(t)
	ctx := context.Background()
	// between returns a hook that writes key under tok with data the
	// first n times it runs, counting every run in *calls.
	between := func(n int, tok func(i int) token.Token, calls *int) func(string) {
		return func(key string) {
			*calls++
			if *calls > n {
				return
			}
			restore := s3fence.SetRaceHook(nil)
			defer restore()
			if err := b.Put(ctx, key, tok(*calls), []byte(fmt.Sprintf("between %d", *calls))); err != nil {
				t.Errorf("the writer in between: %v", err)
			}
		}
	}
	run := func(n int, tok func(i int) token.Token, op func() error) (int, error) {
		t.Helper()
		calls := 0
		restore := s3fence.SetRaceHook(between(n, tok, &calls))
		defer restore()
		err := op()
		return calls, err
	}
	low := func(int) token.Token { return 4 }

	// Over a lower token: retried, lands.
	must(t, b.Put(ctx, "a", 2, []byte("from 2")))
	calls, err := run(1, low, func() error { return b.Put(ctx, "a", 6, []byte("from 6")) })
	if err != nil || calls != 2 {
		t.Fatalf("Put(6) with token 4 written in between: %v after %d reads; want nil after 2", err, calls)
	}
	if data, tok := get(t, b, "a"); data != "from 6" || tok != 6 {
		t.Fatalf("Get = %q, %d; want \"from 6\", 6", data, tok)
	}

	// Under a higher token: stale, the higher one's data kept.
	calls, err = run(1, func(int) token.Token { return 9 }, func() error { return b.Put(ctx, "a", 7, []byte("from 7")) })
	stale(t, err, 7, 9)
	if data, tok := get(t, b, "a"); data != "between 1" || tok != 9 || calls != 1 {
		t.Fatalf("Get = %q, %d after %d reads; want \"between 1\", 9 after 1", data, tok, calls)
	}

	// A key without an object: If-None-Match: * loses to the object
	// created in between.
	calls, err = run(1, low, func() error { return b.Put(ctx, "b", 5, []byte("from 5")) })
	if err != nil || calls != 2 {
		t.Fatalf("Put(5) on a new key created in between: %v after %d reads; want nil after 2", err, calls)
	}
	if data, tok := get(t, b, "b"); data != "from 5" || tok != 5 {
		t.Fatalf("Get = %q, %d; want \"from 5\", 5", data, tok)
	}

	// Delete, over a lower token and under a higher one.
	must(t, b.Put(ctx, "c", 1, []byte("from 1")))
	calls, err = run(1, func(int) token.Token { return 2 }, func() error { return b.Delete(ctx, "c", 3) })
	if _, tok, gerr := b.Get(ctx, "c"); err != nil || calls != 2 || !errors.Is(gerr, s3fence.ErrNotFound) || tok != 3 {
		t.Fatalf("Delete(3) with token 2 written in between: %v after %d reads, then Get: %d, %v", err, calls, tok, gerr)
	}
	_, err = run(1, func(int) token.Token { return 8 }, func() error { return b.Delete(ctx, "c", 5) })
	stale(t, err, 5, 8)

	// Losing every time: Attempts lost races, then ErrContended, and
	// nothing of the Put written.
	calls, err = run(s3fence.Attempts, func(i int) token.Token { return token.Token(10 + i) }, func() error { return b.Put(ctx, "d", 100, []byte("from 100")) })
	if !errors.Is(err, s3fence.ErrContended) || errors.Is(err, token.ErrStale) || calls != s3fence.Attempts {
		t.Fatalf("Put losing every race: %v after %d reads; want ErrContended after %d", err, calls, s3fence.Attempts)
	}
	if data, tok := get(t, b, "d"); data != fmt.Sprintf("between %d", s3fence.Attempts) || tok != token.Token(10+s3fence.Attempts) {
		t.Fatalf("Get = %q, %d; want the last writer in between's", data, tok)
	}
}

func ExampleBucket_Put() {
	ctx := context.Background()
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(exampleEndpoint()), // your store's; none for AWS S3
		Region:       "us-east-1",
		Credentials:  exampleCredentials(),
		UsePathStyle: true,
	})
	reports := s3fence.Bucket{Client: client, Name: "fenced"}

	// Holder A (token 33) writes; a pause later, holder B (token 34) writes;
	// then A wakes up and writes again.
	fmt.Println(reports.Put(ctx, "reports/2024-05-01", 33, []byte("from A")))
	fmt.Println(reports.Put(ctx, "reports/2024-05-01", 34, []byte("from B")))
	err := reports.Put(ctx, "reports/2024-05-01", 33, []byte("from A, late"))
	fmt.Println(err, errors.Is(err, token.ErrStale)) // A must stop
	data, t, _ := reports.Get(ctx, "reports/2024-05-01")
	fmt.Printf("%s (token %d)\n", data, t)
	// Output:
	// <nil>
	// <nil>
	// token: stale: "reports/2024-05-01" got token 33, highest seen is 34 true
	// from B (token 34)
}
