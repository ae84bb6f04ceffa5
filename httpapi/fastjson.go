package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"
)

// Fast paths for the JSON of the lease calls. The bodies of acquire, renew
// and release are small flat objects, and their answers a handful of
// members; encoding/json's reflection and its token-by-token Decoder cost
// more than the rest of the handler (see docs/performance.md). Each fast
// path handles the plain common case only and hands everything else to
// encoding/json, and each gives exactly what encoding/json gives for what
// it handles (fastjson_test.go checks both against encoding/json, and
// FuzzDecodeFast on arbitrary input).

// decodeFast decodes b, a whole body, into members as decodeObject would,
// when b is a plain object: members in any order, each once and known,
// string values without escapes (valid UTF-8, no control characters),
// integer values without sign trouble, no nulls. It reports false, setting
// nothing, for anything else; decodeObject then decodes (or refuses) b.
func decodeFast(b []byte, members []member) bool {
	var set [8]bool // by index in members; no call has more than 8
	if len(members) > len(set) {
		return false
	}
	type found struct {
		i   int
		raw []byte // a string's bytes without quotes, or a number's
		str bool
	}
	var vals [8]found
	n := 0
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			key, next, ok := plainString(b, i)
			if !ok {
				return false
			}
			m := -1
			for j := range members {
				if members[j].name == string(key) {
					m = j
					break
				}
			}
			if m < 0 || set[m] {
				return false // unknown or repeated: decodeObject says which
			}
			set[m] = true
			i = skipSpace(b, next)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i = skipSpace(b, i+1)
			if i >= len(b) {
				return false
			}
			var v found
			v.i = m
			if b[i] == '"' {
				s, next, ok := plainString(b, i)
				if !ok {
					return false
				}
				v.raw, v.str, i = s, true, next
			} else {
				start := i
				for i < len(b) && (b[i] == '-' || '0' <= b[i] && b[i] <= '9') {
					i++
				}
				v.raw = b[start:i]
			}
			vals[n] = v
			n++
			i = skipSpace(b, i)
			if i >= len(b) {
				return false
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
		}
	}
	if skipSpace(b, i) != len(b) {
		return false
	}
	for j, m := range members {
		if m.required && !set[j] {
			return false
		}
	}
	// Every value must fit its member's type before any is set.
	type parsed struct {
		i int64
		u uint64
	}
	var out [8]parsed
	for k := range n {
		v := vals[k]
		switch members[v.i].dst.(type) {
		case **string:
			if !v.str {
				return false
			}
		case **int64:
			x, ok := plainInt(v.raw, v.str)
			if !ok {
				return false
			}
			out[k].i = x
		case **uint64:
			if v.str || len(v.raw) == 0 || v.raw[0] == '-' {
				return false
			}
			x, ok := plainInt(v.raw, false)
			if !ok {
				return false
			}
			out[k].u = uint64(x)
		default:
			return false
		}
	}
	for k := range n {
		v := vals[k]
		switch p := members[v.i].dst.(type) {
		case **string:
			s := string(v.raw)
			*p = &s
		case **int64:
			x := out[k].i
			*p = &x
		case **uint64:
			x := out[k].u
			*p = &x
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string at b[i:] if it has no escapes and no
// control characters and is valid UTF-8; it returns its bytes (without the
// quotes) and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	ascii := true
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, 0, false
}

// plainInt parses a JSON integer: an optional minus and digits without a
// leading zero (a lone 0 aside), within int64; "-0" is left to
// encoding/json.
func plainInt(raw []byte, quoted bool) (int64, bool) {
	if quoted || len(raw) == 0 {
		return 0, false
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' || string(raw) == "-0" {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	x, err := strconv.ParseInt(string(raw), 10, 64)
	return x, err == nil
}

// encodeFast appends v's JSON and a newline to buf, as json.Marshal would
// render it, for the answers of the lease calls; it reports false for any
// other type.
func encodeFast(buf []byte, v any) ([]byte, bool) {
	start := len(buf)
	switch v := v.(type) {
	case grantJSON:
		buf = strMember(buf, "name", v.Name)
		buf = strMember(buf, "holder", v.Holder)
		buf = appendLeaseRest(buf, v.Owner, v.Token, v.TTLMS, v.ExpiresAt)
	case infoJSON:
		buf = strMember(buf, "name", v.Name)
		buf = appendLeaseRest(buf, v.Owner, v.Token, v.TTLMS, v.ExpiresAt)
	case releasedJSON:
		buf = append(buf, `,"released":`...)
		buf = strconv.AppendBool(buf, v.Released)
	default:
		return buf, false
	}
	return append(closeObject(buf, start), '\n'), true
}

// appendLeaseRest appends the members a grant and a lease's public view
// share after the name (and the grant's holder).
func appendLeaseRest(buf []byte, owner string, tok uint64, ttlMS int64, expires string) []byte {
	buf = strMember(buf, "owner", owner)
	buf = uintMember(buf, "token", tok)
	buf = intMember(buf, "ttl_ms", ttlMS)
	return strMember(buf, "expires_at", expires)
}

// The member appenders write `,"key":value`; closeObject turns the first
// member's comma into the opening brace and closes the object.
func strMember(buf []byte, key, v string) []byte { return appendString(memberKey(buf, key), v) }
func intMember(buf []byte, key string, v int64) []byte {
	return strconv.AppendInt(memberKey(buf, key), v, 10)
}
func uintMember(buf []byte, key string, v uint64) []byte {
	return strconv.AppendUint(memberKey(buf, key), v, 10)
}

func memberKey(buf []byte, key string) []byte {
	buf = append(buf, ',', '"')
	buf = append(buf, key...)
	return append(buf, '"', ':')
}

// closeObject ends the object whose members were appended from start on.
func closeObject(buf []byte, start int) []byte {
	buf[start] = '{'
	return append(buf, '}')
}

// appendString appends s as a JSON string, as encoding/json quotes it:
// plain printable ASCII is copied, anything else (escapes, the HTML
// characters <, > and & that encoding/json escapes, non-ASCII) goes through
// json.Marshal.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// encodeRequest renders the body of an acquire, renew or release as
// json.Marshal would; it reports false for any other type.
func encodeRequest(v any) ([]byte, bool) {
	buf := make([]byte, 0, 192)
	switch v := v.(type) {
	case acquireBody:
		buf = strMember(buf, "name", v.Name)
		buf = intMember(buf, "ttl_ms", v.TTLMS)
		buf = strMember(buf, "owner", v.Owner)
		buf = strMember(buf, "holder", v.Holder)
		if v.WaitMS != 0 {
			buf = intMember(buf, "wait_ms", v.WaitMS)
		}
		if v.LockDelayMS != 0 {
			buf = intMember(buf, "lock_delay_ms", v.LockDelayMS)
		}
	case renewBody:
		buf = appendNameHolderToken(buf, v.Name, v.Holder, v.Token)
		if v.TTLMS != nil {
			buf = intMember(buf, "ttl_ms", *v.TTLMS)
		}
	case releaseBody:
		buf = appendNameHolderToken(buf, v.Name, v.Holder, v.Token)
	default:
		return nil, false
	}
	return closeObject(buf, 0), true
}

func appendNameHolderToken(buf []byte, name, holder string, tok uint64) []byte {
	buf = strMember(buf, "name", name)
	buf = strMember(buf, "holder", holder)
	return uintMember(buf, "token", tok)
}

// decodeAnswer decodes a 200 answer from r into out as a json.Decoder
// would: grants and releases through decodeFast when they are plain,
// everything else (and anything unusual) through encoding/json.
func decodeAnswer(r io.Reader, out any) error {
	switch o := out.(type) {
	case *grantJSON:
		b, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes))
		if err != nil {
			return err
		}
		var name, holder, owner, expires *string
		var tok *uint64
		var ttl *int64
		if decodeFast(b, []member{
			{"name", &name, true}, {"holder", &holder, true}, {"owner", &owner, true},
			{"token", &tok, true}, {"ttl_ms", &ttl, true}, {"expires_at", &expires, true},
		}) {
			*o = grantJSON{Name: *name, Holder: *holder, Owner: *owner, Token: *tok, TTLMS: *ttl, ExpiresAt: *expires}
			return nil
		}
		r = bytes.NewReader(b)
	case *releasedJSON:
		b, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes))
		if err != nil {
			return err
		}
		if string(bytes.TrimRight(b, "\n")) == `{"released":true}` {
			o.Released = true
			return nil
		}
		r = bytes.NewReader(b)
	}
	return json.NewDecoder(r).Decode(out)
}
