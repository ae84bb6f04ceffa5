package redisfence_test

import (
	"testing"

	"github.com/picketlock/picket/token"
	"github.com/picketlock/picket/token/redisfence"
)

// BenchmarkWriteRedis: what the fence costs per write on a real server
// (appendfsync always, as the package's doc asks): redisfence.Set against
// a plain SET of the same key and value. The README's "Where your data
// lives" quotes fenced/unfenced.
//
//	go -C token/redisfence test -run '^$' -bench . .
func BenchmarkWriteRedis(b *testing.B) {
	c, _ := newRedis(b)
	ctx := b.Context()
	b.Run("unfenced", func(b *testing.B) {
		for b.Loop() {
			if err := c.Set(ctx, "bench", "v", 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	t := token.Token(0)
	b.Run("fenced", func(b *testing.B) {
		for b.Loop() {
			t++
			if err := redisfence.Set(ctx, c, "bench", t, "v"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
