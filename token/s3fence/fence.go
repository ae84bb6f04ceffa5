package s3fence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/picketlock/picket/token"
)

// Bucket is a bucket whose objects are written under fencing tokens.
// Client is any *s3.Client (AWS S3, or another store's endpoint with
// BaseEndpoint and, usually, UsePathStyle); Name is the bucket's name. A
// Bucket is a value: copy it freely.
type Bucket struct {
	Client *s3.Client
	Name   string
}

// TokenKey is the user metadata key that carries an object's token
// (x-amz-meta-picket-token); DeletedKey marks a tombstone
// (x-amz-meta-picket-deleted: true). The helpers write both and read
// neither: the token they trust is the body's first line.
const (
	TokenKey   = "picket-token"
	DeletedKey = "picket-deleted"
)

// Attempts bounds the conditional writes of one Put or Delete: each lost
// race (another writer got in between the read and the write) reads the
// object again, and after this many lost races in a row the call gives up
// with ErrContended.
const Attempts = 16

// MaxKey is the longest key S3 takes, in bytes of UTF-8.
const MaxKey = 1024

// ErrNotFound is Get's error for a key that holds no object, or holds a
// tombstone (a fenced Delete). It matches fs.ErrNotExist, never
// token.ErrStale.
var ErrNotFound = fmt.Errorf("s3fence: no such object: %w", fs.ErrNotExist)

// ErrUnfenced is the error for an object that this package did not write:
// its body does not begin with a "picket-token T" line. Put and Delete
// refuse to replace it (nothing is written), as Get refuses to read it: it
// may be someone's data written without a token. Delete it by hand, or use
// another key. It never matches token.ErrStale.
var ErrUnfenced = errors.New("s3fence: the object holds no picket-token line")

// ErrContended is the error of a Put or Delete that lost the race
// Attempts times in a row to writers of tokens no higher than its own
// (a higher one ends it in token.ErrStale). Nothing of it was written; it
// may be tried again. It never matches token.ErrStale.
var ErrContended = errors.New("s3fence: lost the race to other writers too often")

// raceHook is nil in production; the tests set it (export_test.go) to
// write between a Put's read and its conditional write.
var raceHook func(key string)

// headerLen bounds the first line: "picket-token " and 16 digits of
// token.Max and " deleted\n" take 38 bytes.
const headerLen = 64

// Put writes data to the object key, fenced by t: if t is at least the token
// the object carries (an equal token is admitted: the holder may write many
// times), the object becomes data under t, in one conditional PutObject
// (If-Match on the ETag read, or If-None-Match: * where there is none). A
// race lost to another writer is retried by reading again. ctx bounds the
// whole call.
//
// Errors: *token.StaleError (matching token.ErrStale) if the object carries a
// higher token: nothing was written, stop; token.ErrZero or an error
// matching token.ErrInvalid for a bad token, key or Bucket, with nothing
// sent; ErrUnfenced for an object not written by this package; ErrContended;
// the store's or the network's error otherwise — after a network error the
// write may or may not have happened (Get tells which), but never with a
// stale token.
func (b Bucket) Put(ctx context.Context, key string, t token.Token, data []byte) error {
	return b.write(ctx, "put", key, t, data, false)
}

// Delete replaces the object key with a tombstone, fenced by t as Put
// writes: the tombstone keeps t, so that a later Put or Delete with a lower
// token stays stale, and Get answers ErrNotFound. Deleting a key that holds
// no object writes the tombstone all the same.
//
// Errors: as Put's.
func (b Bucket) Delete(ctx context.Context, key string, t token.Token) error {
	return b.write(ctx, "delete", key, t, nil, true)
}

// Get returns the data of the object key and the token it was written
// with, from one GetObject.
//
// Errors: ErrNotFound if key holds no object, or a tombstone (then with the
// tombstone's token); ErrUnfenced for an object not written by this
// package; ErrInvalid for a bad key or Bucket; the store's error.
func (b Bucket) Get(ctx context.Context, key string) ([]byte, token.Token, error) {
	if err := b.check(key); err != nil {
		return nil, 0, err
	}
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if err != nil {
		if notFound(err) {
			return nil, 0, fmt.Errorf("s3fence: get %q: %w", key, ErrNotFound)
		}
		if status(err) == http.StatusRequestedRangeNotSatisfiable {
			return nil, 0, fmt.Errorf("s3fence: get %q: an empty object: %w", key, ErrUnfenced)
		}
		return nil, 0, fmt.Errorf("s3fence: get %q: %w", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("s3fence: get %q: %w", key, err)
	}
	t, deleted, n, err := parseHeader(body)
	if err != nil {
		return nil, 0, fmt.Errorf("s3fence: get %q: %w", key, err)
	}
	if deleted {
		return nil, t, fmt.Errorf("s3fence: get %q: deleted under token %d: %w", key, t, ErrNotFound)
	}
	return body[n:], t, nil
}

// current is what a read found at a key.
type current struct {
	exists  bool
	etag    string
	token   token.Token
	deleted bool
}

// read returns the token and ETag of the object key, both from one ranged
// GetObject (the first headerLen bytes of the body): a HEAD's metadata and
// ETag need not belong to one version on every server (doc.go).
func (b Bucket) read(ctx context.Context, key string) (current, error) {
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(b.Name),
		Key:    aws.String(key),
		Range:  aws.String(fmt.Sprintf("bytes=0-%d", headerLen-1)),
	})
	if err != nil {
		if notFound(err) {
			return current{}, nil
		}
		if status(err) == http.StatusRequestedRangeNotSatisfiable {
			return current{}, fmt.Errorf("an empty object: %w", ErrUnfenced)
		}
		return current{}, err
	}
	defer out.Body.Close()
	head, err := io.ReadAll(io.LimitReader(out.Body, headerLen))
	if err != nil {
		return current{}, err
	}
	etag := aws.ToString(out.ETag)
	if etag == "" {
		return current{}, errors.New("the store answered no ETag: it cannot make a conditional write")
	}
	t, deleted, _, err := parseHeader(head)
	if err != nil {
		return current{}, err
	}
	return current{exists: true, etag: etag, token: t, deleted: deleted}, nil
}

func (b Bucket) write(ctx context.Context, op, key string, t token.Token, data []byte, deleted bool) error {
	if err := t.Check(); err != nil {
		return err
	}
	if err := b.check(key); err != nil {
		return err
	}
	body := append([]byte(header(t, deleted)), data...)
	meta := map[string]string{TokenKey: t.String()}
	if deleted {
		meta[DeletedKey] = "true"
	}
	for attempt := 1; ; attempt++ {
		cur, err := b.read(ctx, key)
		if err != nil {
			return fmt.Errorf("s3fence: %s %q: read: %w", op, key, err)
		}
		if cur.exists && t < cur.token {
			return &token.StaleError{Resource: key, Token: t, Highest: cur.token}
		}
		if raceHook != nil {
			raceHook(key)
		}
		in := &s3.PutObjectInput{
			Bucket:        aws.String(b.Name),
			Key:           aws.String(key),
			Body:          bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))),
			Metadata:      meta,
		}
		if cur.exists {
			in.IfMatch = aws.String(cur.etag)
		} else {
			in.IfNoneMatch = aws.String("*")
		}
		_, err = b.Client.PutObject(ctx, in)
		if err == nil {
			return nil
		}
		conflict, lost := lostRace(err)
		if !lost {
			return fmt.Errorf("s3fence: %s %q: %w", op, key, err)
		}
		if attempt == Attempts {
			return fmt.Errorf("s3fence: %s %q: %d conditional writes lost the race in a row: %w", op, key, attempt, ErrContended)
		}
		if conflict {
			// Another conditional write is in flight (AWS's 409): give it
			// a moment to land before reading again.
			select {
			case <-time.After(time.Duration(attempt) * time.Millisecond):
			case <-ctx.Done():
				return fmt.Errorf("s3fence: %s %q: %w", op, key, ctx.Err())
			}
		}
	}
}

// header is the first line of an object's body.
func header(t token.Token, deleted bool) string {
	if deleted {
		return "picket-token " + t.String() + " deleted\n"
	}
	return "picket-token " + t.String() + "\n"
}

// parseHeader reads the first line of an object's body: its token, whether
// it is a tombstone, and the length of the line.
func parseHeader(b []byte) (token.Token, bool, int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 || !bytes.HasPrefix(b, []byte("picket-token ")) {
		return 0, false, 0, ErrUnfenced
	}
	f := strings.Fields(string(b[len("picket-token "):i]))
	deleted := len(f) == 2 && f[1] == "deleted"
	if len(f) != 1 && !deleted {
		return 0, false, 0, fmt.Errorf("first line %q: %w", b[:i], ErrUnfenced)
	}
	t, err := token.Parse(f[0])
	if err != nil || t == 0 {
		return 0, false, 0, fmt.Errorf("first line %q: %w", b[:i], ErrUnfenced)
	}
	return t, deleted, i + 1, nil
}

// lostRace tells whether a conditional PutObject failed because the object
// changed since it was read: 412 (the ETag no longer matches, or an object
// appeared where none was), 409 ConditionalRequestConflict (AWS: another
// conditional write was in flight; conflict is true), or NoSuchKey (the
// object matched by If-Match is gone).
func lostRace(err error) (conflict, lost bool) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ConditionalRequestConflict":
			return true, true
		case "PreconditionFailed", "NoSuchKey":
			return false, true
		}
	}
	switch status(err) {
	case http.StatusPreconditionFailed:
		return false, true
	}
	return false, false
}

func notFound(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound") {
		return true
	}
	return false
}

func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func (b Bucket) check(key string) error {
	switch {
	case b.Client == nil:
		return invalid("a Bucket without a Client")
	case b.Name == "":
		return invalid("a Bucket without a Name")
	case key == "":
		return invalid("empty key")
	case len(key) > MaxKey:
		return invalid("a key of %d bytes, S3 takes at most %d", len(key), MaxKey)
	case !utf8.ValidString(key):
		return invalid("key %q is not UTF-8", key)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("s3fence: %s: %w", fmt.Sprintf(format, args...), token.ErrInvalid)
}
