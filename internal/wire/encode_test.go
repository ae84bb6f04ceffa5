package wire_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
)

// TestListEncoderPages: a list written page by page (empty pages too) is
// the bytes EncodeList writes for all of it at once, and valid JSON; no
// page at all is the empty list.
func TestListEncoderPages(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var infos []lease.Info
	for i := range 5 {
		infos = append(infos, lease.Info{Name: string(rune('a' + i)), Owner: "o", Token: 7, TTL: time.Second, Expires: at})
	}
	for _, pages := range [][][]lease.Info{nil, {{}}, {infos}, {infos[:2], {}, infos[2:]}} {
		var all []lease.Info
		var got bytes.Buffer
		enc := wire.NewListEncoder(&got)
		for _, p := range pages {
			all = append(all, p...)
			if err := enc.Encode(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if all == nil {
			all = []lease.Info{}
		}
		if err := wire.EncodeList(&want, all); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d pages: ListEncoder wrote\n%s\nEncodeList\n%s", len(pages), got.String(), want.String())
		}
		var l wire.List
		if err := json.Unmarshal(got.Bytes(), &l); err != nil || len(l.Leases) != len(all) {
			t.Errorf("%d pages: %v, %d leases; want %d", len(pages), err, len(l.Leases), len(all))
		}
	}
}
