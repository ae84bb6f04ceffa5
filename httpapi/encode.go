package httpapi

import (
	"encoding/json"
	"io"

	"github.com/picketlock/picket/lease"
)

// EncodeGrant writes g to w as HTTP API v1's grant object, the answer of
// POST /v1/acquire and /v1/renew, followed by a newline. Tools that print
// grants (the picket command) use it so scripts read one format everywhere.
func EncodeGrant(w io.Writer, g lease.Grant) error { return json.NewEncoder(w).Encode(grantToJSON(g)) }

// EncodeInfo writes i as HTTP API v1's info object (GET /v1/leases/{name}).
func EncodeInfo(w io.Writer, i lease.Info) error { return json.NewEncoder(w).Encode(infoToJSON(i)) }

// EncodeList writes infos as HTTP API v1's list object (GET /v1/leases),
// without a next page.
func EncodeList(w io.Writer, infos []lease.Info) error {
	return json.NewEncoder(w).Encode(listToJSON(lease.ListPage{Leases: infos}))
}

func listToJSON(page lease.ListPage) listJSON {
	out := listJSON{Leases: make([]infoJSON, 0, len(page.Leases)), Next: page.Next}
	for _, i := range page.Leases {
		out.Leases = append(out.Leases, infoToJSON(i))
	}
	return out
}
