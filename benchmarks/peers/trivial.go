package peers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/picketlock/picket/internal/bench"
	"github.com/picketlock/picket/lease"
)

// TrivialHandler is the baseline server: it reads the request body, and
// answers a constant-sized JSON object with a counter as the token. No
// decoding, no storage: what is left is the cost of net/http itself.
func TrivialHandler() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		var buf [64]byte
		b := strconv.AppendInt(append(buf[:0], `{"token":`...), n.Add(1), 10)
		b = append(b, "}\n"...)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
}

// TrivialTarget measures the trivial handler served at baseURL by a process
// of its own ("peers trivial"), through the same Go HTTP client as
// PicketHTTP: the ceiling of HTTP on this machine. An acquire is one POST
// with a body the size of picket's, a release another: a cycle is two
// requests, as it is over picket's API.
func TrivialTarget(baseURL string, pid int) Target {
	return Target{
		Name:       "trivial-http",
		Durability: "no storage: a trivial net/http handler (the ceiling of HTTP here)",
		Short:      "baseline: no storage",
		Baseline:   true,
		Workloads:  []string{bench.Distinct, bench.Fresh},
		Pid:        pid,
		Open: func(ctx context.Context, clients int) (lease.Store, string, func() error, error) {
			hc, closeIdle := httpClient(clients)
			s := &trivialStore{hc: hc, base: baseURL}
			ping := func(ctx context.Context) error {
				_, err := s.post(ctx, "/v1/release", "ping", "")
				return err
			}
			if err := warm(ctx, clients, ping); err != nil {
				closeIdle()
				return nil, "", nil, err
			}
			return s, "net/http", func() error { closeIdle(); return nil }, nil
		},
	}
}

// trivialStore sends the workloads' calls to the trivial handler.
type trivialStore struct {
	unsupported
	hc   *http.Client
	base string
}

func (s *trivialStore) Acquire(ctx context.Context, req lease.AcquireRequest) (lease.Grant, error) {
	tok, err := s.post(ctx, "/v1/acquire", req.Name, req.Holder)
	if err != nil {
		return lease.Grant{}, err
	}
	return grant(req, tok)
}

func (s *trivialStore) Release(ctx context.Context, req lease.ReleaseRequest) error {
	name, holder := req.Name, req.Holder
	_, err := s.post(ctx, "/v1/release", name, holder)
	return err
}

// post sends a body like picket's and reads the token from the answer.
func (s *trivialStore) post(ctx context.Context, path, name, holder string) (int64, error) {
	body := `{"name":` + strconv.Quote(name) + `,"holder":` + strconv.Quote(holder) + `,"ttl_ms":30000}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("trivial handler: %s", resp.Status)
	}
	b = bytes.TrimSuffix(bytes.TrimPrefix(bytes.TrimSpace(b), []byte(`{"token":`)), []byte("}"))
	return strconv.ParseInt(string(b), 10, 64)
}
