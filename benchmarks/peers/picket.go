package peers

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// picketDurability is what a picket grant survives, embedded or served.
const picketDurability = "durable: WAL, synchronous=FULL, fsync before the reply (group commit)"

// PicketEmbedded measures storage/sqlite in this process, on a new file in
// dir (on the disk being measured, not a tmpfs).
func PicketEmbedded(dir string) Target {
	return Target{
		Name:       "picket-embedded",
		Durable:    true,
		Durability: picketDurability,
		Short:      "durable: fsync, group commit",
		Open: func(ctx context.Context, clients int) (lease.Store, string, func() error, error) {
			d, err := os.MkdirTemp(dir, "picket-embedded-")
			if err != nil {
				return nil, "", nil, err
			}
			st, err := sqlite.Open(filepath.Join(d, "picket.db"))
			if err != nil {
				os.RemoveAll(d)
				return nil, "", nil, err
			}
			return st, "storage/sqlite", func() error {
				err := st.Close()
				if rerr := os.RemoveAll(d); err == nil {
					err = rerr
				}
				return err
			}, nil
		},
	}
}

// PicketHTTP measures a "picket serve" process at baseURL through
// httpapi.Client, one kept-alive connection per client. pid, if not zero,
// is the server's process id, for its CPU time per operation.
func PicketHTTP(baseURL string, pid int) Target {
	return Target{
		Name:       "picket-http",
		Durable:    true,
		Durability: picketDurability + "; over HTTP on loopback, server in its own process",
		Short:      "durable: fsync, group commit",
		Pid:        pid,
		Open: func(ctx context.Context, clients int) (lease.Store, string, func() error, error) {
			hc, closeIdle := httpClient(clients)
			c, err := httpapi.NewClient(baseURL, httpapi.WithHTTPClient(hc))
			if err != nil {
				return nil, "", nil, err
			}
			if err := warm(ctx, clients, c.Health); err != nil {
				closeIdle()
				return nil, "", nil, fmt.Errorf("picket server %s: %w", baseURL, err)
			}
			return c, "picket serve", func() error { closeIdle(); return nil }, nil
		},
	}
}

// httpClient is the Go HTTP client of every HTTP target (picket over HTTP
// and the trivial handler alike): one kept-alive connection per client. The
// default pool keeps two idle connections per host, and a connection per
// request would measure TCP handshakes, not the server.
func httpClient(clients int) (*http.Client, func()) {
	tr := &http.Transport{
		MaxIdleConns:        clients + 4,
		MaxIdleConnsPerHost: clients + 4,
		IdleConnTimeout:     time.Minute,
	}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}
