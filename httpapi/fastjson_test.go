package httpapi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
)

// decodeCases are bodies the fast path must decode exactly as encoding/json
// does, accepted or refused, with the same message.
var decodeCases = []struct {
	name string
	body string
	fast bool // the fast path handles it alone
}{
	{"plain", `{"name":"a","ttl_ms":1000}`, true},
	{"every member", `{"name":"jobs/x","ttl_ms":5000,"owner":"host-1","holder":"h","wait_ms":100,"lock_delay_ms":0}`, true},
	{"other order and spaces", " {\n\t\"ttl_ms\" : 1000 ,\r\n \"name\":\"a\" }\n ", true},
	{"non-ASCII name", `{"name":"ジョブ","ttl_ms":1000}`, true},
	{"empty owner", `{"name":"a","ttl_ms":1000,"owner":""}`, true},
	{"escaped name", `{"name":"a\u0062","ttl_ms":1000}`, false},
	{"escaped slash", `{"name":"a\/b","ttl_ms":1000}`, false},
	{"lone surrogate", `{"name":"a\ud800","ttl_ms":1000}`, false},
	{"null holder", `{"name":"a","ttl_ms":1000,"holder":null}`, false},
	{"empty holder", `{"name":"a","ttl_ms":1000,"holder":""}`, true},
	{"unknown member", `{"name":"a","ttl_ms":1000,"x":1}`, false},
	{"case-folded member", `{"Name":"a","ttl_ms":1000}`, false},
	{"repeated member", `{"name":"a","name":"b","ttl_ms":1000}`, false},
	{"missing ttl", `{"name":"a"}`, false},
	{"ttl as string", `{"name":"a","ttl_ms":"1000"}`, false},
	{"ttl fraction", `{"name":"a","ttl_ms":1000.5}`, false},
	{"ttl exponent", `{"name":"a","ttl_ms":1e3}`, false},
	{"ttl leading zero", `{"name":"a","ttl_ms":01000}`, false},
	{"ttl minus zero", `{"name":"a","ttl_ms":-0}`, false},
	{"ttl negative", `{"name":"a","ttl_ms":-5}`, true},
	{"ttl overflow", `{"name":"a","ttl_ms":99999999999999999999}`, false},
	{"ttl too big", `{"name":"a","ttl_ms":9223372036854775807}`, true},
	{"name as number", `{"name":5,"ttl_ms":1000}`, false},
	{"control character", "{\"name\":\"a\x01\",\"ttl_ms\":1000}", false},
	{"invalid UTF-8", "{\"name\":\"a\xff\",\"ttl_ms\":1000}", false},
	{"format character", "{\"name\":\"a\u200b\",\"ttl_ms\":1000}", true},
	{"trailing data", `{"name":"a","ttl_ms":1000}x`, false},
	{"two objects", `{"name":"a","ttl_ms":1000}{}`, false},
	{"trailing comma", `{"name":"a","ttl_ms":1000,}`, false},
	{"empty object", `{}`, false},
	{"array", `["name"]`, false},
	{"empty", ``, false},
	{"unclosed", `{"name":"a","ttl_ms":1000`, false},
	{"true as ttl", `{"name":"a","ttl_ms":true}`, false},
	{"object as owner", `{"name":"a","ttl_ms":1000,"owner":{}}`, false},
}

// TestDecodeFastSameAsJSON: for every case, the server's decoding (fast
// path first) gives what encoding/json's path gives, and the fast path
// handles the plain bodies alone (so that the comparison is not vacuous).
// The control is FastAcquire itself: the cases it must refuse are refused.
func TestDecodeFastSameAsJSON(t *testing.T) {
	for _, c := range decodeCases {
		t.Run(c.name, func(t *testing.T) {
			if got := httpapi.FastAcquire([]byte(c.body)); got != c.fast {
				t.Errorf("fast path handled it: %v, want %v", got, c.fast)
			}
			want, wantErr := httpapi.DecodeAcquire(strings.NewReader(c.body))
			got, gotErr := httpapi.DecodeAcquireBody([]byte(c.body))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request (-json +fast):\n%s", diff)
			}
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) || errors.Is(wantErr, lease.ErrInvalid) != errors.Is(gotErr, lease.ErrInvalid) {
				t.Errorf("error: json %v, fast %v", wantErr, gotErr)
			}
		})
	}
}

// TestDecodeFastRenewRelease: the same for renew and release bodies, whose
// token is a positive whole number.
func TestDecodeFastRenewRelease(t *testing.T) {
	for _, body := range []string{
		`{"name":"a","holder":"h","token":7}`,
		`{"name":"a","holder":"h","token":7,"ttl_ms":2000}`,
		`{"name":"a","holder":"h","token":-7}`,
		`{"name":"a","holder":"h","token":0}`,
		`{"name":"a","holder":"h","token":18446744073709551615}`,
		`{"name":"a","holder":"h","token":"7"}`,
		`{"token":1,"holder":"h","name":"a"}`,
		`{"name":"a","token":1}`,
	} {
		wantRenew, wantRenewErr := httpapi.DecodeRenew(strings.NewReader(body))
		gotRenew, gotRenewErr := httpapi.DecodeRenewBody([]byte(body))
		if diff := cmp.Diff(wantRenew, gotRenew); diff != "" || fmt.Sprint(wantRenewErr) != fmt.Sprint(gotRenewErr) {
			t.Errorf("renew %s: (-json +fast):\n%s\nerrors: %v / %v", body, diff, wantRenewErr, gotRenewErr)
		}
		wantRel, wantRelErr := httpapi.DecodeRelease(strings.NewReader(body))
		gotRel, gotRelErr := httpapi.DecodeReleaseBody([]byte(body))
		if diff := cmp.Diff(wantRel, gotRel); diff != "" || fmt.Sprint(wantRelErr) != fmt.Sprint(gotRelErr) {
			t.Errorf("release %s: (-json +fast):\n%s\nerrors: %v / %v", body, diff, wantRelErr, gotRelErr)
		}
	}
}

// FuzzDecodeFast: on any body, the fast path and encoding/json's decode
// acquire, renew and release bodies alike.
func FuzzDecodeFast(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := httpapi.DecodeAcquire(strings.NewReader(string(b)))
		got, gotErr := httpapi.DecodeAcquireBody(b)
		if diff := cmp.Diff(want, got); diff != "" || fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Fatalf("acquire %q (-json +fast):\n%s\nerrors: %v / %v", b, diff, wantErr, gotErr)
		}
		wantRel, wantRelErr := httpapi.DecodeRelease(strings.NewReader(string(b)))
		gotRel, gotRelErr := httpapi.DecodeReleaseBody(b)
		if diff := cmp.Diff(wantRel, gotRel); diff != "" || fmt.Sprint(wantRelErr) != fmt.Sprint(gotRelErr) {
			t.Fatalf("release %q (-json +fast):\n%s\nerrors: %v / %v", b, diff, wantRelErr, gotRelErr)
		}
	})
}

// TestEncodeFastSameAsJSON: the answers the fast path writes are byte for
// byte what encoding/json writes, for plain values and for the ones it
// hands over (HTML characters, escapes, non-ASCII).
func TestEncodeFastSameAsJSON(t *testing.T) {
	exp := time.Date(2026, 12, 2, 21, 0, 0, 123456789, time.UTC)
	for _, s := range []string{"a", "jobs/nightly", "", `a"b`, `a\b`, "<script>&", "ジョブ", "a\u2028b", "tab\there", "\x7f"} {
		g := lease.Grant{Name: s, Holder: s + "h", Owner: s, Token: 1<<53 - 1, TTL: 1500 * time.Millisecond, Expires: exp}
		fast, slow, ok := httpapi.EncodeGrantBoth(g)
		if !ok || string(fast) != string(slow) {
			t.Errorf("grant %q: fast %s (handled %v), json %s", s, fast, ok, slow)
		}
		fast, slow, ok = httpapi.EncodeInfoBoth(lease.Info{Name: s, Owner: s, Token: 3, TTL: time.Minute, Expires: exp})
		if !ok || string(fast) != string(slow) {
			t.Errorf("info %q: fast %s (handled %v), json %s", s, fast, ok, slow)
		}
	}
}

// TestClientJSONSameAsJSON: the client's request bodies are byte for byte
// json.Marshal's, and its reading of grant and release answers is a
// json.Decoder's, for plain answers and unusual ones (which it hands over).
func TestClientJSONSameAsJSON(t *testing.T) {
	for _, kind := range []string{"acquire", "renew", "release"} {
		for _, s := range []string{"a", "", `q"<&>`, "ジョブ"} {
			for _, n := range []int64{0, 1500} {
				fast, slow, ok := httpapi.RequestBoth(kind, s, s+"o", s+"h", uint64(n+1), n, n, n, n != 0)
				if !ok || string(fast) != string(slow) {
					t.Errorf("%s %q %d: fast %s (handled %v), json %s", kind, s, n, fast, ok, slow)
				}
			}
		}
	}
	for _, a := range []struct {
		body     string
		released bool
	}{
		{`{"name":"a","holder":"h","owner":"","token":7,"ttl_ms":1500,"expires_at":"2026-12-02T21:00:00.5Z"}` + "\n", false},
		{`{"expires_at":"x","ttl_ms":1,"token":1,"owner":"o","holder":"h","name":"a"}`, false},
		{`{"name":"a\u0062","holder":"h","owner":"","token":7,"ttl_ms":1500,"expires_at":"x"}`, false},
		{`{"name":"a","holder":"h","owner":null,"token":7,"ttl_ms":1500,"expires_at":"x","extra":1}`, false},
		{`{"Name":"a","holder":"h","owner":"","token":7,"ttl_ms":1500,"expires_at":"x"}`, false},
		{`{"name":"a","holder":"h","owner":"","token":7,"ttl_ms":1500,"expires_at":"x"} trailing`, false},
		{`{"name":"a","token":-1}`, false},
		{`not json`, false},
		{`{"released":true}` + "\n", true},
		{`{"released":false}`, true},
		{`{"released":true,"x":1}`, true},
	} {
		fast, slow := httpapi.AnswerBoth([]byte(a.body), a.released)
		if fast != slow {
			t.Errorf("answer %s: fast %s, json %s", a.body, fast, slow)
		}
	}
}
