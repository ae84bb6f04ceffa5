package linearize_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/picketlock/picket/lease/leasetest/linearize"
	"github.com/picketlock/picket/token"
)

// The store time every hand-written history starts at.
const t0 = time.Hour

// h builds hand-written histories: each call is added with a real-time
// interval [call, ret] (ret < 0: unknown outcome) and a store time at which
// both ends read the store's clock. A grant or Get answers with the name
// and holder asked for unless the case sets others.
type h struct{ ops []porcupine.Operation }

func (b *h) add(client int, call, ret int64, at time.Duration, in linearize.Input, out linearize.Output) *h {
	in.Now, out.Now = at, at
	if out.Result == linearize.OK && in.Kind != linearize.GetFenced && in.Kind != linearize.PutFenced && in.Kind != linearize.Release {
		if out.Name == "" {
			out.Name = in.Name
		}
		if out.Holder == "" && in.Kind != linearize.Get {
			out.Holder = in.Holder
		}
	}
	if ret < 0 {
		ret = 1 << 62
		out = linearize.Output{Result: linearize.Unknown}
	}
	b.ops = append(b.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	return b
}

// settled adds a call of unknown outcome that Recorder.Settle declared
// finished at settledAt: it took effect by then, or never.
func (b *h) settled(client int, call, settledAt int64, at time.Duration, in linearize.Input) *h {
	in.Now = at
	out := linearize.Output{Result: linearize.Unknown, Settled: true, Now: at}
	b.ops = append(b.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: settledAt})
	return b
}

func acq(name, holder string, ttl time.Duration) linearize.Input {
	return linearize.Input{Kind: linearize.Acquire, Name: name, Holder: holder, Owner: "o-" + holder, TTL: ttl}
}

func renew(name, holder string, tok token.Token, ttl time.Duration) linearize.Input {
	return linearize.Input{Kind: linearize.Renew, Name: name, Holder: holder, Token: tok, TTL: ttl}
}

func rel(name, holder string, tok token.Token) linearize.Input {
	return linearize.Input{Kind: linearize.Release, Name: name, Holder: holder, Token: tok}
}

func get(name string) linearize.Input { return linearize.Input{Kind: linearize.Get, Name: name} }

func put(key string, tok token.Token, value string) linearize.Input {
	return linearize.Input{Kind: linearize.PutFenced, Name: key, Token: tok, Value: value}
}

func getKV(key string) linearize.Input { return linearize.Input{Kind: linearize.GetFenced, Name: key} }

// granted is a grant to holder made at store time at.
func granted(tok token.Token, holder string, ttl, at time.Duration) linearize.Output {
	return linearize.Output{Result: linearize.OK, Token: tok, Owner: "o-" + holder, TTL: ttl, Expires: at + ttl}
}

func info(tok token.Token, holder string, ttl, expires time.Duration) linearize.Output {
	return linearize.Output{Result: linearize.OK, Token: tok, Owner: "o-" + holder, TTL: ttl, Expires: expires}
}

func heldBy(holder string, until time.Duration) linearize.Output {
	return linearize.Output{Result: linearize.Held, Owner: "o-" + holder, Expires: until}
}

func result(r linearize.Result) linearize.Output { return linearize.Output{Result: r} }

func kvValue(tok token.Token, v string) linearize.Output {
	return linearize.Output{Result: linearize.OK, Token: tok, Value: v}
}

func TestModel(t *testing.T) {
	const s = time.Second
	ok, lost, notFound := result(linearize.OK), result(linearize.Lost), result(linearize.NotFound)
	tests := []struct {
		name string
		h    *h
		cfg  linearize.Config
		want porcupine.CheckResult
	}{
		{"acquire, held, renew, release, fresh grant", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0, acq("a", "y", 10*s), heldBy("x", t0+10*s)).
			add(0, 4, 5, t0+5*s, renew("a", "x", 1, 0), granted(1, "x", 10*s, t0+5*s)).
			add(1, 6, 7, t0+5*s, get("a"), info(1, "x", 10*s, t0+15*s)).
			add(0, 8, 9, t0+5*s, rel("a", "x", 1), ok).
			add(1, 10, 11, t0+5*s, get("a"), notFound).
			add(1, 12, 13, t0+5*s, acq("a", "y", 10*s), granted(2, "y", 10*s, t0+5*s)),
			linearize.Config{}, porcupine.Ok},
		{"expiry frees the name", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(0, 2, 3, t0+10*s, renew("a", "x", 1, 0), lost).
			add(1, 4, 5, t0+10*s, acq("a", "y", 10*s), granted(2, "y", 10*s, t0+10*s)).
			add(0, 6, 7, t0+10*s, rel("a", "x", 1), lost),
			linearize.Config{}, porcupine.Ok},
		{"a second holder while the lease is live", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0+9*s, acq("a", "y", 10*s), granted(2, "y", 10*s, t0+9*s)),
			linearize.Config{}, porcupine.Illegal},
		{"lock-delay keeps the name", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0+12*s, acq("a", "y", 10*s), heldBy("x", t0+15*s)).
			add(0, 4, 5, t0+12*s, acq("a", "x", 10*s), heldBy("x", t0+15*s)).
			add(1, 6, 7, t0+15*s, acq("a", "y", 10*s), granted(2, "y", 10*s, t0+15*s)),
			linearize.Config{LockDelay: 5 * s}, porcupine.Ok},
		{"granted inside the lock-delay", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0+12*s, acq("a", "y", 10*s), granted(2, "y", 10*s, t0+12*s)),
			linearize.Config{LockDelay: 5 * s}, porcupine.Illegal},
		{"held error with a wrong deadline", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0, acq("a", "y", 10*s), heldBy("x", t0+20*s)),
			linearize.Config{}, porcupine.Illegal},
		{"held though free", new(h).
			add(1, 2, 3, t0, acq("a", "y", 10*s), heldBy("x", t0+20*s)),
			linearize.Config{}, porcupine.Illegal},
		{"same holder gets the same grant back", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0+s, acq("a", "x", 20*s), granted(1, "x", 20*s, t0+s)).
			add(1, 4, 5, t0+s, get("a"), info(1, "x", 20*s, t0+21*s)),
			linearize.Config{}, porcupine.Ok},
		{"same holder gets a new token on a live lease", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0+s, acq("a", "x", 10*s), granted(2, "x", 10*s, t0+s)),
			linearize.Config{}, porcupine.Illegal},
		{"a token reissued on another name", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0, acq("b", "y", 10*s), granted(1, "y", 10*s, t0)),
			linearize.Config{}, porcupine.Illegal},
		{"a token going backwards across names", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(5, "x", 10*s, t0)).
			add(1, 2, 3, t0, acq("b", "y", 10*s), granted(4, "y", 10*s, t0)),
			linearize.Config{}, porcupine.Illegal},
		{"concurrent grants are ordered by token", new(h).
			add(0, 0, 3, t0, acq("a", "x", 10*s), granted(5, "x", 10*s, t0)).
			add(1, 1, 2, t0, acq("b", "y", 10*s), granted(4, "y", 10*s, t0)),
			linearize.Config{}, porcupine.Ok},
		{"a token going backwards on one name", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(5, "x", 10*s, t0)).
			add(0, 2, 3, t0, rel("a", "x", 5), ok).
			add(1, 4, 5, t0, acq("a", "y", 10*s), granted(5, "y", 10*s, t0)),
			linearize.Config{}, porcupine.Illegal},
		{"renew changes the token", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(0, 2, 3, t0, renew("a", "x", 1, 0), granted(2, "x", 10*s, t0)),
			linearize.Config{}, porcupine.Illegal},
		{"renew of an expired lease", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(0, 2, 3, t0+10*s, renew("a", "x", 1, 0), granted(1, "x", 10*s, t0+10*s)),
			linearize.Config{}, porcupine.Illegal},
		{"renew with the wrong token", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(0, 2, 3, t0, renew("a", "x", 7, 0), granted(7, "x", 10*s, t0)),
			linearize.Config{}, porcupine.Illegal},
		{"lost though held", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(0, 2, 3, t0, renew("a", "x", 1, 0), lost),
			linearize.Config{}, porcupine.Illegal},
		{"release does not free", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(0, 2, 3, t0, rel("a", "x", 1), ok).
			add(1, 4, 5, t0, acq("a", "y", 10*s), heldBy("x", t0+10*s)),
			linearize.Config{}, porcupine.Illegal},
		{"get shows another token", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0, get("a"), info(2, "x", 10*s, t0+10*s)),
			linearize.Config{}, porcupine.Illegal},
		{"a lost grant is shown later by its holder", new(h).
			add(0, 0, -1, t0, acq("a", "x", 10*s), linearize.Output{}).
			add(1, 2, 3, t0, acq("b", "y", 10*s), granted(7, "y", 10*s, t0)).
			add(1, 4, 5, t0, acq("a", "y", 10*s), heldBy("x", t0+10*s)).
			add(0, 6, 7, t0, acq("a", "x", 10*s), granted(6, "x", 10*s, t0)),
			linearize.Config{}, porcupine.Ok},
		{"a lost grant that may not have happened", new(h).
			add(0, 0, -1, t0, acq("a", "x", 10*s), linearize.Output{}).
			add(1, 2, 3, t0, acq("a", "y", 10*s), granted(1, "y", 10*s, t0)),
			linearize.Config{}, porcupine.Ok},
		{"a shown lost grant with a token below the counter before it", new(h).
			add(1, 0, 1, t0, acq("b", "y", 10*s), granted(7, "y", 10*s, t0)).
			add(0, 2, -1, t0, acq("a", "x", 10*s), linearize.Output{}).
			add(0, 4, 5, t0, acq("a", "x", 10*s), granted(6, "x", 10*s, t0)),
			linearize.Config{}, porcupine.Illegal},
		{"a settled lost grant shown with a token below every later fresh one", new(h).
			settled(0, 0, 3, t0, acq("a", "x", 10*s)).
			add(1, 4, 5, t0, acq("b", "y", 10*s), granted(5, "y", 10*s, t0)).
			add(2, 8, 9, t0, acq("c", "z", 10*s), granted(7, "z", 10*s, t0)).
			add(0, 10, 11, t0, acq("a", "x", 10*s), granted(4, "x", 10*s, t0)),
			linearize.Config{}, porcupine.Ok},
		// Issue 8 item 9: the token check let a lost grant settled before
		// a fresh grant began carry a token above it (tokens backwards).
		{"a settled lost grant shown with a token above a fresh one after it", new(h).
			settled(0, 0, 3, t0, acq("a", "x", 10*s)).
			add(1, 4, 5, t0, acq("b", "y", 10*s), granted(5, "y", 10*s, t0)).
			add(2, 8, 9, t0, acq("c", "z", 10*s), granted(7, "z", 10*s, t0)).
			add(0, 10, 11, t0, acq("a", "x", 10*s), granted(6, "x", 10*s, t0)),
			linearize.Config{}, porcupine.Illegal},
		{"an unsettled lost grant shown with a token above a fresh one after it", new(h).
			add(0, 0, -1, t0, acq("a", "x", 10*s), linearize.Output{}).
			add(1, 4, 5, t0, acq("b", "y", 10*s), granted(5, "y", 10*s, t0)).
			add(2, 8, 9, t0, acq("c", "z", 10*s), granted(7, "z", 10*s, t0)).
			add(0, 10, 11, t0, acq("a", "x", 10*s), granted(6, "x", 10*s, t0)),
			linearize.Config{}, porcupine.Ok},
		{"a lost release may have freed the name", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(0, 2, -1, t0, rel("a", "x", 1), linearize.Output{}).
			add(1, 4, 5, t0, acq("a", "y", 10*s), granted(2, "y", 10*s, t0)),
			linearize.Config{}, porcupine.Ok},
		{"a grant to another holder", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), func() linearize.Output {
				o := granted(1, "x", 10*s, t0)
				o.Holder = "y"
				return o
			}()),
			linearize.Config{}, porcupine.Illegal},
		{"a get about another name", new(h).
			add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
			add(1, 2, 3, t0, get("a"), func() linearize.Output {
				o := info(1, "x", 10*s, t0+10*s)
				o.Name = "b"
				return o
			}()),
			linearize.Config{}, porcupine.Illegal},
		{"fenced puts", new(h).
			add(0, 0, 1, t0, put("k", 3, "a"), ok).
			add(1, 2, 3, t0, put("k", 3, "b"), ok).
			add(0, 4, 5, t0, put("k", 2, "c"), linearize.Output{Result: linearize.Stale, Token: 3}).
			add(1, 6, 7, t0, getKV("k"), kvValue(3, "b")).
			add(1, 8, 9, t0, getKV("other"), notFound),
			linearize.Config{}, porcupine.Ok},
		{"a lower token accepted", new(h).
			add(0, 0, 1, t0, put("k", 3, "a"), ok).
			add(1, 2, 3, t0, put("k", 2, "b"), ok),
			linearize.Config{}, porcupine.Illegal},
		{"a stale answer with the wrong highest", new(h).
			add(0, 0, 1, t0, put("k", 3, "a"), ok).
			add(1, 2, 3, t0, put("k", 2, "b"), linearize.Output{Result: linearize.Stale, Token: 4}),
			linearize.Config{}, porcupine.Illegal},
		{"a get that misses the highest", new(h).
			add(0, 0, 1, t0, put("k", 3, "a"), ok).
			add(0, 2, 3, t0, put("k", 4, "b"), ok).
			add(1, 4, 5, t0, getKV("k"), kvValue(3, "a")),
			linearize.Config{}, porcupine.Illegal},
		{"a put with unknown outcome", new(h).
			add(0, 0, 1, t0, put("k", 3, "a"), ok).
			add(0, 2, -1, t0, put("k", 4, "b"), linearize.Output{}).
			add(1, 4, 5, t0, getKV("k"), kvValue(3, "a")).
			add(1, 6, 7, t0, getKV("k"), kvValue(4, "b")),
			linearize.Config{}, porcupine.Ok},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := linearize.Check(tc.h.ops, tc.cfg, 10*time.Second); got != tc.want {
				t.Errorf("Check = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestVisualize: an illegal history's visualization is written to a file.
func TestVisualize(t *testing.T) {
	const s = time.Second
	b := new(h).
		add(0, 0, 1, t0, acq("a", "x", 10*s), granted(1, "x", 10*s, t0)).
		add(1, 2, 3, t0, acq("b", "y", 10*s), granted(1, "y", 10*s, t0))
	path, err := linearize.Visualize(b.ops, linearize.Config{}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<html", `acquire(\"b\", y, ttl 10s)`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the visualization %s does not contain %q", path, want)
		}
	}
}
