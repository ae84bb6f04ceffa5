package linearize

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// KV is a fenced key-value table (storage/sqlite's Store, httpapi's Client).
type KV interface {
	PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error
	GetFenced(ctx context.Context, key string) ([]byte, token.Token, error)
}

// Recorder records the calls made through its Clients, with their times on
// the monotonic clock and the store's clock, as a porcupine history. It is
// safe for concurrent use.
type Recorder struct {
	clock lease.Clock
	start time.Time

	mu         sync.Mutex
	ops        []porcupine.Operation
	unknown    int
	unexpected []error
}

// NewRecorder returns a Recorder that reads clock, the store's clock, around
// every call (see the package doc on time).
func NewRecorder(clock lease.Clock) *Recorder {
	return &Recorder{clock: clock, start: time.Now()}
}

// Client returns a lease.Store (and a KV) that forwards every call to st (and
// kv, which may be nil) and records it as made by client id, a small number
// starting at zero, one per concurrent caller.
func (r *Recorder) Client(id int, st lease.Store, kv KV) *Client {
	return &Client{r: r, id: id, st: st, kv: kv}
}

// Operations returns a copy of the history so far.
func (r *Recorder) Operations() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.ops...)
}

// Settle declares that the store has finished every call recorded so far:
// each call whose outcome is unknown took effect before now, or never. Its
// return time, until now the end of time, becomes now, and its store time
// is bounded by the store clock's reading now. Call it only when no call is
// in flight and the store has dealt with whatever cancelled callers left
// behind (for storage/sqlite: after a write has gone through its queue;
// over HTTP: after the server has finished every request, too). It makes
// the check stricter (a store that commits a cancelled call much later is
// caught) and the search smaller.
func (r *Recorder) Settle() {
	now, storeNow := r.since(), r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.ops {
		op := &r.ops[i]
		if op.Return != forever {
			continue
		}
		out := op.Output.(Output)
		out.Now, out.Settled = storeNow, true
		op.Output, op.Return = out, now
	}
}

// Unknown returns how many recorded calls had an unknown outcome.
func (r *Recorder) Unknown() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unknown
}

// Unexpected returns the errors that were neither a definite answer (held,
// lost, not found, stale) nor a context's error nor lease.ErrUnavailable:
// calls a test did not mean to make (lease.ErrInvalid) or stores failing in
// other ways. Their calls were recorded with unknown outcomes.
func (r *Recorder) Unexpected() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.unexpected...)
}

// since returns the monotonic time since r was created.
func (r *Recorder) since() int64 { return int64(time.Since(r.start)) }

// call is one call in progress.
type call struct {
	r      *Recorder
	client int
	in     Input
	start  int64
	wall   time.Time // the store clock's wall reading at the start
}

func (r *Recorder) begin(client int, in Input) *call {
	c := &call{r: r, client: client, in: in, start: r.since()}
	if nw, ok := r.clock.(nowWaller); ok {
		c.in.Now, c.wall = nw.NowWall()
	} else {
		c.in.Now, c.wall = r.clock.Now(), r.clock.Wall()
	}
	return c
}

// nowWaller is a clock that moves while calls are outstanding (a store on
// real time) and so must give both readings of one instant, or deadlines
// would map to store times a few nanoseconds apart from call to call.
type nowWaller interface {
	NowWall() (time.Duration, time.Time)
}

// storeTime turns a wall-clock deadline the store reported into store time.
func (c *call) storeTime(t time.Time) time.Duration { return c.in.Now + t.Sub(c.wall) }

// end records the call with out, classifying err: a definite answer sets
// out.Result, anything else makes the outcome unknown.
func (c *call) end(out Output, err error) {
	ret := c.r.since()
	out.Now = c.r.clock.Now()
	var held *lease.HeldError
	var stale *token.StaleError
	switch {
	case err == nil:
		out.Result = OK
	case errors.As(err, &held):
		out = Output{Result: Held, Owner: held.Owner, Expires: c.storeTime(held.Expires), Now: out.Now}
	case errors.Is(err, lease.ErrLost):
		out = Output{Result: Lost, Now: out.Now}
	case errors.Is(err, lease.ErrNotFound):
		out = Output{Result: NotFound, Now: out.Now}
	case errors.As(err, &stale):
		out = Output{Result: Stale, Token: stale.Highest, Now: out.Now}
	default:
		out = Output{Result: Unknown}
		ret = forever
	}
	if err != nil {
		out.Err = err.Error()
	}
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if out.Result == Unknown {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lease.ErrUnavailable) {
			r.unexpected = append(r.unexpected, err)
		}
		if c.in.Kind == Get || c.in.Kind == GetFenced {
			return // a read that may not have happened tells nothing
		}
		r.unknown++
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: c.client, Input: c.in, Call: c.start, Output: out, Return: ret})
}

// Client is a lease.Store and a KV whose calls are recorded. It is safe for
// concurrent use, but porcupine reads one Client as one sequential caller:
// give each goroutine its own.
type Client struct {
	r  *Recorder
	id int
	st lease.Store
	kv KV
}

var (
	_ lease.Store = (*Client)(nil)
	_ KV          = (*Client)(nil)
)

// grantOutput is the Output of a call that answered g.
func (c *call) grantOutput(g lease.Grant) Output {
	return Output{Name: g.Name, Holder: g.Holder, Token: g.Token, Owner: g.Owner, TTL: g.TTL, Expires: c.storeTime(g.Expires)}
}

// Acquire records st.Acquire.
func (c *Client) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	rc := c.r.begin(c.id, Input{Kind: Acquire, Name: req.Name, Holder: req.Holder, Owner: req.Owner, TTL: req.TTL})
	g, err := c.st.Acquire(ctx, req)
	rc.end(rc.grantOutput(g), err)
	return g, err
}

// Renew records st.Renew.
func (c *Client) Renew(ctx context.Context, req lease.RenewRequest) (lease.Grant, error) {
	name, holder, tok, ttl := req.Name, req.Holder, req.Token, req.TTL
	rc := c.r.begin(c.id, Input{Kind: Renew, Name: name, Holder: holder, Token: tok, TTL: ttl})
	g, err := c.st.Renew(ctx, lease.RenewRequest{Name: name, Holder: holder, Token: tok, TTL: ttl})
	rc.end(rc.grantOutput(g), err)
	return g, err
}

// Release records st.Release.
func (c *Client) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder, tok := req.Name, req.Holder, req.Token
	rc := c.r.begin(c.id, Input{Kind: Release, Name: name, Holder: holder, Token: tok})
	err := c.st.Release(ctx, lease.ReleaseRequest{Name: name, Holder: holder, Token: tok})
	rc.end(Output{}, err)
	return err
}

// Get records st.Get.
func (c *Client) Get(ctx context.Context, name string) (lease.Info, error) {
	rc := c.r.begin(c.id, Input{Kind: Get, Name: name})
	i, err := c.st.Get(ctx, name)
	rc.end(Output{Name: i.Name, Token: i.Token, Owner: i.Owner, TTL: i.TTL, Expires: rc.storeTime(i.Expires)}, err)
	return i, err
}

// List forwards to st.List without recording: the model has no
// multi-name read.
func (c *Client) List(ctx context.Context, req lease.ListRequest) (lease.ListPage, error) {
	return c.st.List(ctx, req)
}

// PutFenced records kv.PutFenced.
func (c *Client) PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error {
	rc := c.r.begin(c.id, Input{Kind: PutFenced, Name: key, Token: tok, Value: string(value)})
	err := c.kv.PutFenced(ctx, key, value, tok)
	rc.end(Output{}, err)
	return err
}

// GetFenced records kv.GetFenced.
func (c *Client) GetFenced(ctx context.Context, key string) ([]byte, token.Token, error) {
	rc := c.r.begin(c.id, Input{Kind: GetFenced, Name: key})
	v, tok, err := c.kv.GetFenced(ctx, key)
	rc.end(Output{Token: tok, Value: string(v)}, err)
	return v, tok, err
}
