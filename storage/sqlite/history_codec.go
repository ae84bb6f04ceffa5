package sqlite

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The encoding of a history row's events. Since schema version 8 a row
// (format 2) is the byte rowFormat2 and then, for each event in order:
//
//	varint   the event's time less the row's at, in nanoseconds (zero or less)
//	byte     the kind (kindCodes) in the low four bits; flags above them:
//	         flagNoOwner (the owner is empty), flagSameOwner (it is the
//	         last non-empty owner of the row), flagNoReason (the reason
//	         and revoked-by are both empty)
//	varint   the token less the previous event's (the first: less zero)
//	uvarint  how many bytes the name shares with the previous event's name
//	uvarint  length, bytes: the rest of the name
//	         the owner unless flagged: uvarint length, bytes
//	         the reason and revoked-by unless flagged: uvarint length, bytes each
//
// A batch's events share its time, their names usually share a prefix and
// their tokens are near each other: about 8 bytes an event where format 1
// took about 50, so that a batch's row rarely needs a page of its own, and
// each commit writes fewer pages to the -wal (docs/performance.md).
//
// Format 1 (schema versions 5 to 7, still read): for each event, its time
// as above, a byte of kind, uvarint token, then 4 × (uvarint length, bytes)
// for name, owner, reason and revoked-by. Its first byte, a zigzag varint
// of zero or less, is 0x00 or odd: never rowFormat2.
const rowFormat2 = 0x02

const (
	flagNoOwner   = 1 << 4
	flagSameOwner = 1 << 5
	flagNoReason  = 1 << 6
	kindMask      = 0x0f
)

// kindCodes are the kinds' codes; their order is the file format.
var kindCodes = [...]lease.EventKind{lease.EventGrant, lease.EventRelease, lease.EventExpire, lease.EventRevoke, lease.EventFenced}

func kindCode(k lease.EventKind) byte {
	for i, c := range kindCodes {
		if c == k {
			return byte(i)
		}
	}
	panic("sqlite: unknown event kind " + string(k))
}

// rowCoder is what an event's encoding in a row depends on: the event
// before it.
type rowCoder struct {
	tok   token.Token
	name  string
	owner string // the last non-empty owner
}

// start begins a row in buf: its format byte.
func (c *rowCoder) start(buf []byte) []byte {
	*c = rowCoder{}
	return append(buf, rowFormat2)
}

// appendEvent appends e, of a row at at, to buf.
func (c *rowCoder) appendEvent(buf []byte, at int64, e event) []byte {
	buf = binary.AppendVarint(buf, e.at-at)
	head := kindCode(e.kind)
	switch {
	case e.owner == "":
		head |= flagNoOwner
	case e.owner == c.owner:
		head |= flagSameOwner
	}
	if e.reason == "" && e.revokedBy == "" {
		head |= flagNoReason
	}
	buf = append(buf, head)
	buf = binary.AppendVarint(buf, int64(e.tok)-int64(c.tok))
	shared := commonPrefix(c.name, e.name)
	buf = binary.AppendUvarint(buf, uint64(shared))
	buf = appendString(buf, e.name[shared:])
	if head&(flagNoOwner|flagSameOwner) == 0 {
		buf = appendString(buf, e.owner)
		c.owner = e.owner
	}
	if head&flagNoReason == 0 {
		buf = appendString(buf, e.reason)
		buf = appendString(buf, e.revokedBy)
	}
	c.tok, c.name = e.tok, e.name
	return buf
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

var errBadEvents = errors.New("sqlite: a history row that picket did not write")

// decodeEvents decodes the n events of a row (first seq, at at) from b, in
// either format.
func decodeEvents(seq, at int64, n int, b []byte) ([]lease.Event, error) {
	if n < 0 || n > len(b) { // every event takes a byte at least
		return nil, errBadEvents
	}
	d := rowDecoder{b: b, seq: seq, at: at}
	if len(b) > 0 && b[0] == rowFormat2 {
		d.b, d.format2 = b[1:], true
	}
	out := make([]lease.Event, 0, n)
	for i := range n {
		e, ok := d.next(i)
		if !ok {
			return nil, errBadEvents
		}
		out = append(out, e)
	}
	if len(d.b) != 0 {
		return nil, errBadEvents
	}
	return out, nil
}

// rowDecoder reads a row's events in turn.
type rowDecoder struct {
	b       []byte
	seq, at int64
	format2 bool
	tok     int64  // the previous event's (format 2)
	name    string // the previous event's (format 2)
	owner   string // the last non-empty owner (format 2)
}

func (d *rowDecoder) varint() (int64, bool) {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		return 0, false
	}
	d.b = d.b[k:]
	return v, true
}

func (d *rowDecoder) uvarint() (uint64, bool) {
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		return 0, false
	}
	d.b = d.b[k:]
	return v, true
}

// strs reads strings (uvarint length, bytes) into fields, in turn.
func (d *rowDecoder) strs(fields ...*string) bool {
	for _, f := range fields {
		l, ok := d.uvarint()
		if !ok || uint64(len(d.b)) < l {
			return false
		}
		*f, d.b = string(d.b[:l]), d.b[l:]
	}
	return true
}

// next reads event i: its time and kind, then the rest in the row's format.
func (d *rowDecoder) next(i int) (lease.Event, bool) {
	delta, ok := d.varint()
	if !ok || len(d.b) == 0 {
		return lease.Event{}, false
	}
	head := d.b[0]
	d.b = d.b[1:]
	code := int(head)
	if d.format2 {
		code = int(head & kindMask)
	}
	if code >= len(kindCodes) {
		return lease.Event{}, false
	}
	e := lease.Event{Seq: uint64(d.seq) + uint64(i), Time: time.Unix(0, d.at+delta).UTC(), Kind: kindCodes[code]}
	if d.format2 {
		return e, d.rest2(&e, head)
	}
	tok, ok := d.uvarint()
	e.Token = token.Token(tok)
	return e, ok && d.strs(&e.Name, &e.Owner, &e.Reason, &e.By)
}

// rest2 reads the rest of a format 2 event whose head byte is head.
func (d *rowDecoder) rest2(e *lease.Event, head byte) bool {
	if head&^(kindMask|flagNoOwner|flagSameOwner|flagNoReason) != 0 || head&flagNoOwner != 0 && head&flagSameOwner != 0 {
		return false
	}
	dt, ok := d.varint()
	if !ok || d.tok+dt < 0 {
		return false
	}
	d.tok += dt
	e.Token = token.Token(d.tok)
	shared, ok := d.uvarint()
	var rest string
	if !ok || shared > uint64(len(d.name)) || !d.strs(&rest) {
		return false
	}
	e.Name = d.name[:shared] + rest
	d.name = e.Name
	switch {
	case head&flagNoOwner != 0:
	case head&flagSameOwner != 0:
		if e.Owner = d.owner; e.Owner == "" {
			return false
		}
	default:
		if !d.strs(&e.Owner) || e.Owner == "" {
			return false
		}
		d.owner = e.Owner
	}
	return head&flagNoReason != 0 || d.strs(&e.Reason, &e.By)
}
