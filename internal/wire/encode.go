package wire

import (
	"encoding/json"
	"io"

	"github.com/picketlock/picket/lease"
)

// EncodeGrant writes g to w as HTTP API v1's grant object, the answer of
// POST /v1/acquire and /v1/renew, followed by a newline.
func EncodeGrant(w io.Writer, g lease.Grant) error { return json.NewEncoder(w).Encode(FromGrant(g)) }

// EncodeInfo writes i as HTTP API v1's info object (GET /v1/leases/{name}).
func EncodeInfo(w io.Writer, i lease.Info) error { return json.NewEncoder(w).Encode(FromInfo(i)) }

// EncodeList writes infos as HTTP API v1's list object (GET /v1/leases),
// without a next page.
func EncodeList(w io.Writer, infos []lease.Info) error {
	return json.NewEncoder(w).Encode(FromList(lease.ListPage{Leases: infos}))
}

// EncodeEvent writes ev as one event of HTTP API v1's history object (GET
// /v1/history), followed by a newline: `picket history -json` prints these.
func EncodeEvent(w io.Writer, ev lease.Event) error {
	return json.NewEncoder(w).Encode(FromEvent(ev))
}

// EncodeState writes st as HTTP API v1's watch state (GET
// /v1/leases/{name}?wait=&after=), on one line: picket watch -json.
func EncodeState(w io.Writer, st lease.State) error {
	return json.NewEncoder(w).Encode(FromState(st))
}

// ListEncoder writes HTTP API v1's list object (GET /v1/leases, without a
// next page) one page of leases at a time, so that a long list is never
// held in memory: the bytes are those EncodeList writes for all the pages
// together. Call Encode for each page and Close once at the end.
type ListEncoder struct {
	w     io.Writer
	buf   []byte
	count int
}

// NewListEncoder returns a ListEncoder writing to w.
func NewListEncoder(w io.Writer) *ListEncoder { return &ListEncoder{w: w} }

// Encode writes infos, continuing the list.
func (e *ListEncoder) Encode(infos []lease.Info) error {
	e.buf = e.buf[:0]
	if e.count == 0 {
		e.buf = append(e.buf, `{"leases":[`...)
	}
	for _, i := range infos {
		b, err := json.Marshal(FromInfo(i))
		if err != nil {
			return err
		}
		if e.count > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = append(e.buf, b...)
		e.count++
	}
	if e.count == 0 {
		return nil // nothing yet: Close writes the empty list
	}
	_, err := e.w.Write(e.buf)
	return err
}

// Close ends the list.
func (e *ListEncoder) Close() error {
	end := "]}\n"
	if e.count == 0 {
		end = `{"leases":[]}` + "\n"
	}
	_, err := io.WriteString(e.w, end)
	return err
}
