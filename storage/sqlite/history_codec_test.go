package sqlite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// randomEvents returns n events as batches record them: most at the row's
// time, some earlier (expiries), tokens rising with releases of older
// ones, names sharing prefixes or not (some not ASCII), owners empty,
// repeated or new, a few with a reason and revoked-by.
func randomEvents(rng *rand.Rand, n int, at int64) []event {
	names := []string{"jobs/billing/7", "jobs/billing/17", "jobs/b", "j", "", "élan/ü", "élan/ö", "x/" + string(rune(0x1f600))}
	owners := []string{"", "", "svc-a", "svc-b", "svc-a"}
	kinds := kindCodes[:]
	tok := token.Token(rng.IntN(1000))
	out := make([]event, n)
	for i := range out {
		e := event{at: at, kind: kinds[rng.IntN(len(kinds))], owner: owners[rng.IntN(len(owners))]}
		switch rng.IntN(4) {
		case 0:
			e.name = names[rng.IntN(len(names))]
		case 1:
			e.name = fmt.Sprintf("picket-bench/s1/distinct/%d", rng.IntN(64))
		default:
			e.name = fmt.Sprintf("%s/%d", names[rng.IntN(len(names))], rng.IntN(100))
		}
		switch rng.IntN(5) {
		case 0:
			e.tok = tok - token.Token(rng.IntN(int(tok)+1)) // a release of an older grant
		case 1:
			e.tok = token.Token(rng.Int64N(int64(token.Max) + 1))
		default:
			tok++
			e.tok = tok
		}
		if rng.IntN(6) == 0 {
			e.at -= rng.Int64N(int64(time.Hour))
		}
		if rng.IntN(8) == 0 {
			e.reason, e.revokedBy = "not claimed", ""
			if rng.IntN(2) == 0 {
				e.reason, e.revokedBy = "", "ops@example"
			}
		}
		out[i] = e
	}
	return out
}

// wantEvents is what decoding a row of evs, first seq seq at at, must give.
func wantEvents(seq, at int64, evs []event) []lease.Event {
	out := make([]lease.Event, len(evs))
	for i, e := range evs {
		out[i] = lease.Event{Seq: uint64(seq) + uint64(i), Time: time.Unix(0, e.at).UTC(), Kind: e.kind, Token: e.tok,
			Name: e.name, Owner: e.owner, Reason: e.reason, By: e.revokedBy}
	}
	return out
}

// checkRow decodes buf, a row of evs (first seq seq, at at), and fails t
// unless it gives exactly evs.
func checkRow(t *testing.T, row int, seq, at int64, evs []event, buf []byte) {
	t.Helper()
	got, err := decodeEvents(seq, at, len(evs), buf)
	if err != nil {
		t.Fatalf("row %d: %v", row, err)
	}
	if d := cmp.Diff(wantEvents(seq, at, evs), got); d != "" {
		t.Fatalf("row %d (-want +got):\n%s", row, d)
	}
}

// TestEventCodecRoundTrip: rows of random events, encoded in format 2, decode
// to exactly those events.
func TestEventCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC).UnixNano()
	for i := range 2000 {
		evs := randomEvents(rng, 1+rng.IntN(80), at)
		var c rowCoder
		buf := c.start(nil)
		for _, e := range evs {
			buf = c.appendEvent(buf, at, e)
		}
		checkRow(t, i, int64(i)*100+1, at, evs, buf)
	}
}

// appendEventFormat1 is format 1's encoding, as schema versions 5 to 7
// wrote it (history_codec.go's description).
func appendEventFormat1(buf []byte, at int64, e event) []byte {
	buf = binary.AppendVarint(buf, e.at-at)
	buf = append(buf, kindCode(e.kind))
	buf = binary.AppendUvarint(buf, uint64(e.tok))
	for _, s := range [...]string{e.name, e.owner, e.reason, e.revokedBy} {
		buf = appendString(buf, s)
	}
	return buf
}

// TestEventCodecFormat1: rows that files at schema version 7 hold still
// decode.
func TestEventCodecFormat1(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	at := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC).UnixNano()
	for i := range 500 {
		evs := randomEvents(rng, 1+rng.IntN(40), at)
		var buf []byte
		for _, e := range evs {
			buf = appendEventFormat1(buf, at, e)
		}
		if buf[0] == rowFormat2 {
			t.Fatalf("row %d: a format 1 row begins with the format 2 byte", i)
		}
		checkRow(t, i, 7, at, evs, buf)
	}
}

// TestEventCodecSize: a batch of the benchmark's acquires and releases
// takes about 8 bytes an event in format 2 (format 1 took about 50), so
// that a batch's row rarely needs a page of its own.
func TestEventCodecSize(t *testing.T) {
	at := time.Now().UnixNano()
	var evs []event
	for i := range 31 {
		name := fmt.Sprintf("picket-bench/116d25c4/s1/distinct/%d", i)
		evs = append(evs, event{at: at, kind: lease.EventGrant, name: name, tok: token.Token(97830 + i), owner: "picket-bench"})
		evs = append(evs, event{at: at, kind: lease.EventRelease, name: fmt.Sprintf("picket-bench/116d25c4/s1/distinct/%d", 63-i), tok: token.Token(97790 + i)})
	}
	var c rowCoder
	buf := c.start(nil)
	var old []byte
	for _, e := range evs {
		buf = c.appendEvent(buf, at, e)
		old = appendEventFormat1(old, at, e)
	}
	per, perOld := float64(len(buf))/float64(len(evs)), float64(len(old))/float64(len(evs))
	t.Logf("%d events: format 2 %d bytes (%.1f an event), format 1 %d (%.1f)", len(evs), len(buf), per, len(old), perOld)
	if per > 10 {
		t.Errorf("format 2 takes %.1f bytes an event, want at most 10", per)
	}
}

// TestEventCodecBadRows: a row picket did not write (cut short, a byte
// changed, a wrong count) is an error, never a panic or a wrong event
// list of the right length taken as good without every byte read.
func TestEventCodecBadRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	at := time.Now().UnixNano()
	evs := randomEvents(rng, 30, at)
	var c rowCoder
	good := c.start(nil)
	for _, e := range evs {
		good = c.appendEvent(good, at, e)
	}
	for cut := 0; cut < len(good); cut++ {
		if _, err := decodeEvents(1, at, len(evs), good[:cut]); !errors.Is(err, errBadEvents) {
			t.Fatalf("row cut to %d of %d bytes: %v, want errBadEvents", cut, len(good), err)
		}
	}
	for _, n := range []int{-1, 0, len(evs) - 1, len(evs) + 1, 1 << 20} {
		if _, err := decodeEvents(1, at, n, good); !errors.Is(err, errBadEvents) {
			t.Errorf("%d events claimed of %d: %v, want errBadEvents", n, len(evs), err)
		}
	}
	for _, bad := range [][]byte{
		{rowFormat2, 0, 0x0f, 0, 0, 0},                              // no such kind
		{rowFormat2, 0, flagNoOwner | flagSameOwner, 0, 0, 0},       // no owner and the same owner
		{rowFormat2, 0, flagSameOwner | flagNoReason, 2, 0, 1, 'a'}, // the same owner as none
		{rowFormat2, 0, flagNoOwner | flagNoReason, 1, 5, 1, 'a'},   // more of the name shared than there was
	} {
		if _, err := decodeEvents(1, at, 1, bad); !errors.Is(err, errBadEvents) {
			t.Errorf("row % x: %v, want errBadEvents", bad, err)
		}
	}
	for range 20000 {
		b := append([]byte(nil), good...)
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		_, _ = decodeEvents(1, at, len(evs), b) // must not panic
	}
}

// FuzzDecodeEvents: no row makes decoding panic, and a row that decodes
// encodes back to the same events.
func FuzzDecodeEvents(f *testing.F) {
	at := time.Now().UnixNano()
	var c rowCoder
	seed := c.start(nil)
	for _, e := range randomEvents(rand.New(rand.NewPCG(7, 8)), 5, at) {
		seed = c.appendEvent(seed, at, e)
	}
	f.Add(seed, 5)
	f.Add(appendEventFormat1(nil, at, event{at: at, kind: lease.EventGrant, name: "a", tok: 1, owner: "o"}), 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		evs, err := decodeEvents(1, at, n, b)
		if err != nil || len(b) == 0 || b[0] != rowFormat2 {
			return
		}
		var c rowCoder
		again := c.start(nil)
		for _, e := range evs {
			again = c.appendEvent(again, at, event{at: e.Time.UnixNano(), kind: e.Kind, name: e.Name, tok: e.Token,
				owner: e.Owner, reason: e.Reason, revokedBy: e.By})
		}
		back, err := decodeEvents(1, at, n, again)
		if err != nil {
			t.Fatalf("re-encoded row: %v", err)
		}
		if d := cmp.Diff(evs, back); d != "" {
			t.Fatalf("(-first +again):\n%s", d)
		}
	})
}
