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
	Owner     string `json:"o,omitempty"`
	TTL       int64  `json:"t"`           // the TTL, in milliseconds
	LockDelay int64  `json:"d,omitempty"` // milliseconds
	Expires   int64  `json:"x"`           // wall-clock rendering, Unix nanoseconds: for people, never decides
	Offset    int64  `json:"f,omitempty"` // the token floor's offset at the grant (floor.go): token = create revision + Offset
}

// ttl returns how long the key must stay unchanged before an observer may
// end the lease it holds.
func (r record) ttl() time.Duration { return time.Duration(r.TTL) * time.Millisecond }

// delayRecord is what the lease key holds once its lease has expired and
// its lock-delay runs (an expired key): expiredTag, then this JSON. It has
// no holder's hash, so neither Renew nor Release matches it.
type delayRecord struct {
	Owner     string `json:"o,omitempty"`
	LockDelay int64  `json:"d"` // milliseconds
	FreeAt    int64  `json:"x"` // Unix nanoseconds, for people
}

// expiredTag starts the value of an expired key. It sorts outside every
// holder's hash range (hex digits), so no hash comparison matches it.
const expiredTag = "expired" + hashSep

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
	return expiredTag + string(b)
}

// decodeKey reads a lease key's value: a lease (its holder's hash and
// record) or an expired key in its lock-delay (expired true, dr).
func decodeKey(v []byte) (hash string, r record, expired bool, dr delayRecord, err error) {
	if js, ok := strings.CutPrefix(string(v), expiredTag); ok {
		_ = json.Unmarshal([]byte(js), &dr) // a value that is not ours blocks the name all the same
		return "", r, true, dr, nil
	}
	hash, r, err = decodeLease(v)
	return hash, r, false, dr, err
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

// expiresAt renders the expiry of a lease of ttl asked at sent, in Unix
// nanoseconds.
func expiresAt(sent time.Time, ttl time.Duration) int64 {
	return sent.Add(ttl).UnixNano()
}
