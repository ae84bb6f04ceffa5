package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/redisfence"
)

// TestSetHSetDel: the fenced writes on a real server, step by step: a
// first token, the same again, a higher one, a lower one (stale, with the
// highest, nothing written), a Del that keeps the fence, a lower Set after
// it still stale.
func TestSetHSetDel(t *testing.T) {
	c, _ := newRedis(t)
	ctx := t.Context()
	stale := func(err error, tok, highest token.Token) {
		t.Helper()
		var se *token.StaleError
		if !errors.As(err, &se) || !errors.Is(err, token.ErrStale) || se.Token != tok || se.Highest != highest {
			t.Fatalf("got %v, want a *token.StaleError of token %d, highest %d", err, tok, highest)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) string {
		t.Helper()
		v, err := c.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return "<none>"
		}
		must(err)
		return v
	}
	must(redisfence.Set(ctx, c, "job:1", 5, "from 5"))
	must(redisfence.Set(ctx, c, "job:1", 5, "from 5 again"))
	must(redisfence.Set(ctx, c, "job:1", 7, "from 7"))
	stale(redisfence.Set(ctx, c, "job:1", 6, "from 6"), 6, 7)
	if got := get("job:1"); got != "from 7" {
		t.Fatalf("job:1 = %q after a stale write, want %q", got, "from 7")
	}
	must(redisfence.Del(ctx, c, "job:1", 8))
	stale(redisfence.Set(ctx, c, "job:1", 7, "from 7, late"), 7, 8)
	if got := get("job:1"); got != "<none>" {
		t.Fatalf("job:1 = %q after Del and a stale Set, want it gone", got)
	}
	stale(redisfence.Del(ctx, c, "job:1", 3), 3, 8)
	if h, err := redisfence.Highest(ctx, c, "job:1"); err != nil || h != 8 {
		t.Fatalf("Highest = %d, %v; want 8", h, err)
	}

	must(redisfence.HSet(ctx, c, "user:{42}", 10, "name", "ada", "plan", "pro"))
	stale(redisfence.HSet(ctx, c, "user:{42}", 9, "plan", "free"), 9, 10)
	got, err := c.HGetAll(ctx, "user:{42}").Result()
	must(err)
	if d := cmp.Diff(map[string]string{"name": "ada", "plan": "pro"}, got); d != "" {
		t.Fatalf("user:{42} after a stale HSet (-want +got):\n%s", d)
	}
	if h, _ := redisfence.Highest(ctx, c, "user:{42}"); h != 10 {
		t.Fatalf("Highest(user:{42}) = %d, want 10", h)
	}
}

// TestBadInputWritesNothing: a zero token, one above token.Max, an empty
// key, a key no fence can share a slot with, bad HSet pairs: ErrInvalid,
// and the server holds no key afterwards.
func TestBadInputWritesNothing(t *testing.T) {
	c, _ := newRedis(t)
	ctx := t.Context()
	cases := []struct {
		name string
		err  error
	}{
		{"zero token", redisfence.Set(ctx, c, "k", 0, "v")},
		{"token above Max", redisfence.Set(ctx, c, "k", token.Max+1, "v")},
		{"empty key", redisfence.Set(ctx, c, "", 1, "v")},
		{"a } without a tag", redisfence.Set(ctx, c, "a}b", 1, "v")},
		{"an empty tag and a }", redisfence.Del(ctx, c, "{}x", 1)},
		{"hset without pairs", redisfence.HSet(ctx, c, "h", 1)},
		{"hset odd", redisfence.HSet(ctx, c, "h", 1, "f")},
		{"hset too many", redisfence.HSet(ctx, c, "h", 1, make([]string, 2*redisfence.MaxFields+2)...)},
		{"hset zero token", redisfence.HSet(ctx, c, "h", 0, "f", "v")},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, token.ErrInvalid) || errors.Is(tc.err, token.ErrStale) {
			t.Errorf("%s: got %v, want an error matching token.ErrInvalid", tc.name, tc.err)
		}
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("the server holds %d keys (%v) after bad input only", n, err)
	}
}

// TestWrongTypeChangesNothing: HSet on a key that holds a string is
// Redis's WRONGTYPE, not ErrStale, and neither the data nor the fence moves
// (the script writes the data before it raises the fence).
func TestWrongTypeChangesNothing(t *testing.T) {
	c, _ := newRedis(t)
	ctx := t.Context()
	if err := redisfence.Set(ctx, c, "s", 3, "text"); err != nil {
		t.Fatal(err)
	}
	err := redisfence.HSet(ctx, c, "s", 4, "f", "v")
	if err == nil || errors.Is(err, token.ErrStale) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("HSet on a string: %v, want Redis's WRONGTYPE", err)
	}
	if h, _ := redisfence.Highest(ctx, c, "s"); h != 3 {
		t.Fatalf("the fence moved to %d on a failed write, want 3", h)
	}
	// A fence key that holds no token is an error, never admitted.
	if err := c.Set(ctx, "{t}"+redisfence.FenceSuffix, "junk", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := redisfence.Set(ctx, c, "t", 9, "v"); err == nil || errors.Is(err, token.ErrStale) {
		t.Fatalf("Set over a fence key holding junk: %v, want an error", err)
	}
	if n, _ := c.Exists(ctx, "t").Result(); n != 0 {
		t.Fatal("written over a fence key holding junk")
	}
}

// TestFenceKeySameSlot: every data key and its fence key hash to one
// Redis Cluster slot, as a real server in cluster mode computes it
// (CLUSTER KEYSLOT), for keys with and without hash tags and with braces in
// odd places.
func TestFenceKeySameSlot(t *testing.T) {
	c, _ := newRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	ctx := t.Context()
	for _, key := range []string{"jobs:7", "{user:42}:name", "a{b}c", "{a}{b}", "a{b", "{", "x{y}z}", "é{ü}", "{{a}}", strings.Repeat("k", 300)} {
		fk, err := redisfence.FenceKey(key)
		if err != nil {
			t.Errorf("FenceKey(%q): %v", key, err)
			continue
		}
		want, err1 := c.ClusterKeySlot(ctx, key).Result()
		got, err2 := c.ClusterKeySlot(ctx, fk).Result()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("FenceKey(%q) = %q: slot %d, the key's is %d", key, fk, got, want)
		}
	}
	for _, key := range []string{"a}b", "{}x", "x{}{y}", "}"} {
		if fk, err := redisfence.FenceKey(key); !errors.Is(err, token.ErrInvalid) {
			t.Errorf("FenceKey(%q) = %q, %v; want ErrInvalid (no fence key shares its slot)", key, fk, err)
		}
	}
}

func ExampleSet() {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: exampleAddr()}) // e.g. "127.0.0.1:6379"
	defer c.Close()

	// Holder A (token 33) writes; a pause later, holder B (token 34) writes;
	// then A wakes up and writes again.
	fmt.Println(redisfence.Set(ctx, c, "report:2024-05-01", 33, "from A"))
	fmt.Println(redisfence.Set(ctx, c, "report:2024-05-01", 34, "from B"))
	err := redisfence.Set(ctx, c, "report:2024-05-01", 33, "from A, late")
	fmt.Println(err, errors.Is(err, token.ErrStale)) // A must stop
	v, _ := c.Get(ctx, "report:2024-05-01").Result()
	fmt.Println(v)
	// Output:
	// <nil>
	// <nil>
	// token: stale: "report:2024-05-01" got token 33, highest seen is 34 true
	// from B
}
