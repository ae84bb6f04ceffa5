package peers

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/picketlock/picket/internal/bench"
)

// FsyncFloor is the floor of every durable row: one client overwriting 4 KiB
// of a file in dir and calling fdatasync, one at a time. Its rate is syncs
// per second; no durable grant can be acknowledged faster than one of them
// (group commit shares one among many grants).
func FsyncFloor(dir string) Target {
	return Target{
		Name:       "fsync-floor",
		Durable:    true,
		Durability: "the floor of every durable row: 4 KiB pwrite + fdatasync, one client",
		Short:      "baseline: one fdatasync",
		Baseline:   true,
		Measure: func(ctx context.Context, d time.Duration, ops int64) (bench.Row, error) {
			f, err := os.CreateTemp(dir, "fsync-floor-")
			if err != nil {
				return bench.Row{}, err
			}
			defer os.Remove(f.Name())
			defer f.Close()
			buf := make([]byte, 4096)
			if _, err := f.WriteAt(buf, 0); err != nil {
				return bench.Row{}, err
			}
			if err := f.Sync(); err != nil {
				return bench.Row{}, err
			}
			var h bench.Histogram
			row := bench.Row{Names: "fsync", Clients: 1}
			start := time.Now()
			stop := start.Add(d)
			for n := int64(0); n < ops && time.Now().Before(stop) && ctx.Err() == nil; n++ {
				buf[0] = byte(n)
				t0 := time.Now()
				if _, err := f.WriteAt(buf, 0); err != nil {
					return row, err
				}
				if err := unix.Fdatasync(int(f.Fd())); err != nil {
					return row, err
				}
				h.Record(time.Since(t0))
				row.Grants++
			}
			row.Elapsed = time.Since(start)
			row.GrantsPerSec = float64(row.Grants) / row.Elapsed.Seconds()
			row.P50, row.P99, row.Max = h.Quantile(0.5), h.Quantile(0.99), h.Max()
			return row, ctx.Err()
		},
	}
}
