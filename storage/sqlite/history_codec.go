package sqlite

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The encoding of a history row's events: for each, in order,
//
//	varint   the event's time less the row's at, in nanoseconds (zero or less)
//	byte     the kind (kindCodes)
//	uvarint  the token
//	4 × (uvarint length, bytes)   name, owner, reason, revoked by

// kindCodes are the kinds' bytes; their order is the file format.
var kindCodes = [...]lease.EventKind{lease.EventGrant, lease.EventRelease, lease.EventExpire, lease.EventRevoke, lease.EventFenced}

func kindCode(k lease.EventKind) byte {
	for i, c := range kindCodes {
		if c == k {
			return byte(i)
		}
	}
	panic("sqlite: unknown event kind " + string(k))
}

// appendEvent appends e, of a row at at, to buf.
func appendEvent(buf []byte, at int64, e event) []byte {
	buf = binary.AppendVarint(buf, e.at-at)
	buf = append(buf, kindCode(e.kind))
	buf = binary.AppendUvarint(buf, uint64(e.tok))
	for _, s := range [...]string{e.name, e.owner, e.reason, e.revokedBy} {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	return buf
}

var errBadEvents = errors.New("sqlite: a history row that picket did not write")

// decodeEvents decodes the n events of a row (first seq, at at) from b.
func decodeEvents(seq, at int64, n int, b []byte) ([]lease.Event, error) {
	out := make([]lease.Event, 0, n)
	for i := range n {
		d, k := binary.Varint(b)
		if k <= 0 || len(b) < k+1 {
			return nil, errBadEvents
		}
		b = b[k:]
		code := int(b[0])
		b = b[1:]
		if code >= len(kindCodes) {
			return nil, errBadEvents
		}
		tok, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errBadEvents
		}
		b = b[k:]
		var fields [4]string
		for f := range fields {
			l, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < l {
				return nil, errBadEvents
			}
			fields[f] = string(b[k : k+int(l)])
			b = b[k+int(l):]
		}
		out = append(out, lease.Event{Seq: uint64(seq) + uint64(i), Time: time.Unix(0, at+d).UTC(), Kind: kindCodes[code],
			Token: token.Token(tok), Name: fields[0], Owner: fields[1], Reason: fields[2], By: fields[3]})
	}
	if len(b) != 0 {
		return nil, errBadEvents
	}
	return out, nil
}
