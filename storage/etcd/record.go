package etcd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// record is what the lease key holds after the holder's hash: the lease as
// granted. The token is not in it: it is the key's create revision.
type record struct {
	Owner      string `json:"o,omitempty"`
	Asked      int64  `json:"a"`            // the TTL asked for, in whole seconds (rounded up)
	TTL        int64  `json:"t"`            // the TTL granted, in milliseconds (whole seconds: etcd's less the slack, see pool.go)
	LockDelay  int64  `json:"d,omitempty"`  // milliseconds
	Expires    int64  `json:"x"`            // wall-clock rendering, Unix nanoseconds
	DelayLease int64  `json:"dl,omitempty"` // the etcd lease of the lock-delay key, if any
	Offset     int64  `json:"f,omitempty"`  // the token floor's offset at the grant (floor.go): token = create revision + Offset
}

// delayRecord is what the lock-delay key holds.
type delayRecord struct {
	Owner  string `json:"o,omitempty"`
	FreeAt int64  `json:"x"` // Unix nanoseconds, for people
}

// holderHash is what the store keeps of a holder: its SHA-256 in hex, so
// that the secret itself never sits in the cluster. Every hash has the same
// length, which lets a transaction compare "the value starts with this hash"
// as two byte-order comparisons (see hashCmps).
func holderHash(holder string) string {
	sum := sha256.Sum256([]byte(holder))
	return hex.EncodeToString(sum[:])
}

// The lease key's value is holderHash + hashSep + JSON. hashEnd sorts right
// after hashSep, so a value starts with h exactly when h < value < h+hashEnd.
const (
	hashSep = "|"
	hashEnd = "}"
)

func encodeLease(holder string, r record) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain fields: cannot fail
	}
	return holderHash(holder) + hashSep + string(b)
}

// decodeLease splits a lease key's value.
func decodeLease(v []byte) (hash string, r record, err error) {
	h, js, ok := strings.Cut(string(v), hashSep)
	if !ok || len(h) != sha256.Size*2 {
		return "", r, fmt.Errorf("etcd: a lease value that picket did not write (%d bytes)", len(v))
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		return "", r, fmt.Errorf("etcd: a lease value that picket did not write: %w", err)
	}
	return h, r, nil
}

func encodeDelay(r delayRecord) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func decodeDelay(v []byte) delayRecord {
	var r delayRecord
	_ = json.Unmarshal(v, &r) // a value that is not ours blocks the name all the same
	return r
}

// leaseInfo returns the public view of the lease in kv under name.
func leaseInfo(name string, kv *mvccpb.KeyValue) (lease.Info, record, string, error) {
	h, r, err := decodeLease(kv.Value)
	if err != nil {
		return lease.Info{}, r, "", err
	}
	return lease.Info{
		Name:    name,
		Owner:   r.Owner,
		Token:   tokenOf(kv.CreateRevision, r.Offset),
		TTL:     time.Duration(r.TTL) * time.Millisecond,
		Expires: time.Unix(0, r.Expires).UTC(),
	}, r, h, nil
}

// keyToken returns the token of the lease key kv (0 for a value picket did
// not write).
func keyToken(kv *mvccpb.KeyValue) token.Token {
	_, r, err := decodeLease(kv.Value)
	if err != nil {
		return 0
	}
	return tokenOf(kv.CreateRevision, r.Offset)
}

// seconds rounds d up to whole seconds, at least one: etcd leases count
// whole seconds.
func seconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// expiresAt renders the expiry of a lease of ttl seconds asked at sent, in
// Unix nanoseconds.
func expiresAt(sent time.Time, ttl int64) int64 {
	return sent.Add(time.Duration(ttl) * time.Second).UnixNano()
}
