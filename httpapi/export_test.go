package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/picketlock/picket/lease"
)

// Hooks for the external tests (package httpapi_test) and their fuzz
// targets: the request decoders, which no exported API reaches alone.
var (
	DecodeAcquire = decodeAcquire
	DecodeRenew   = decodeRenew
	DecodeRelease = decodeRelease
)

// DecodeAcquireBody and the others decode a body read in full, as the
// server does: through the fast path (fastjson.go) when it applies, where
// DecodeAcquire on a plain reader always takes encoding/json's.
func DecodeAcquireBody(b []byte) (lease.AcquireRequest, error) { return decodeAcquire(bodyOf(b)) }
func DecodeRenewBody(b []byte) (lease.RenewRequest, error)     { return decodeRenew(bodyOf(b)) }
func DecodeReleaseBody(b []byte) (lease.ReleaseRequest, error) { return decodeRelease(bodyOf(b)) }

func bodyOf(b []byte) body { return body{Reader: bytes.NewReader(b), b: b} }

// FastAcquire reports whether the fast path alone decodes b as an acquire
// body (its fields, in any order).
func FastAcquire(b []byte) bool {
	var (
		name, owner, holder        *string
		ttlMS, waitMS, lockDelayMS *int64
	)
	return decodeFast(b, []member{
		{"name", &name, true}, {"ttl_ms", &ttlMS, true}, {"owner", &owner, false},
		{"holder", &holder, false}, {"wait_ms", &waitMS, false}, {"lock_delay_ms", &lockDelayMS, false},
	})
}

// EncodeGrantBoth renders g's answer both ways: through the fast path and
// through encoding/json, which it must equal.
func EncodeGrantBoth(g lease.Grant) (fast, slow []byte, ok bool) {
	return encodeBoth(grantToJSON(g))
}

// EncodeInfoBoth is EncodeGrantBoth for a lease's public view.
func EncodeInfoBoth(i lease.Info) (fast, slow []byte, ok bool) { return encodeBoth(infoToJSON(i)) }

func encodeBoth(v any) (fast, slow []byte, ok bool) {
	fast, ok = encodeFast(nil, v)
	slow, _ = json.Marshal(v)
	return fast, append(slow, '\n'), ok
}

// RequestBoth renders a request body through the fast path and through
// json.Marshal; kind is "acquire", "renew" or "release".
func RequestBoth(kind, name, owner, holder string, tok uint64, ttlMS, waitMS, delayMS int64, withTTL bool) (fast, slow []byte, ok bool) {
	var v any
	switch kind {
	case "acquire":
		v = acquireBody{Name: name, TTLMS: ttlMS, Owner: owner, Holder: holder, WaitMS: waitMS, LockDelayMS: delayMS}
	case "renew":
		rb := renewBody{Name: name, Holder: holder, Token: tok}
		if withTTL {
			rb.TTLMS = &ttlMS
		}
		v = rb
	default:
		v = releaseBody{Name: name, Holder: holder, Token: tok}
	}
	fast, ok = encodeRequest(v)
	slow, _ = json.Marshal(v)
	return fast, slow, ok
}

// AnswerBoth decodes a grant answer (or, with released, a release's)
// through decodeAnswer and through a json.Decoder, and renders each result
// and error as text.
func AnswerBoth(b []byte, released bool) (fast, slow string) {
	render := func(v any, err error) string { return fmt.Sprintf("%+v %v", v, err) }
	if released {
		var f, s releasedJSON
		ferr := decodeAnswer(bytes.NewReader(b), &f)
		serr := json.NewDecoder(bytes.NewReader(b)).Decode(&s)
		return render(f, ferr), render(s, serr)
	}
	var f, s grantJSON
	ferr := decodeAnswer(bytes.NewReader(b), &f)
	serr := json.NewDecoder(bytes.NewReader(b)).Decode(&s)
	return render(f, ferr), render(s, serr)
}
