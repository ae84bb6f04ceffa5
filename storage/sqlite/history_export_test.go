package sqlite

import "github.com/picketlock/picket/lease"

// DecodeEvents decodes a history row, for the crash tests, which read the
// file raw.
var DecodeEvents = decodeEvents

// EncodeEventsFormat1 encodes evs as a history row of format 1 at at, as
// files at schema versions 5 to 7 hold them.
func EncodeEventsFormat1(at int64, evs []lease.Event) []byte {
	var buf []byte
	for _, e := range evs {
		buf = appendEventFormat1(buf, at, event{at: e.Time.UnixNano(), kind: e.Kind, name: e.Name, tok: e.Token,
			owner: e.Owner, reason: e.Reason, revokedBy: e.By})
	}
	return buf
}
