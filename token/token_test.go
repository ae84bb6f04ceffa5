package token_test

import (
	"errors"
	"testing"

	"github.com/picketlock/picket/token"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want token.Token
		zero bool // the error must be ErrZero
	}{
		{name: "one", in: "1", want: 1},
		{name: "several digits", in: "1234567", want: 1234567},
		{name: "max", in: "9007199254740991", want: token.Max},
		{name: "zero", in: "0", zero: true},
		{name: "empty", in: ""},
		{name: "above max", in: "9007199254740992"},
		{name: "above uint64", in: "18446744073709551616"},
		{name: "leading zero", in: "01"},
		{name: "double zero", in: "00"},
		{name: "plus sign", in: "+1"},
		{name: "minus sign", in: "-1"},
		{name: "leading space", in: " 1"},
		{name: "trailing space", in: "1 "},
		{name: "exponent", in: "1e3"},
		{name: "hex", in: "0x10"},
		{name: "list", in: "1,2"},
		{name: "arabic-indic digit", in: "\u0661"},
		{name: "nul byte", in: "1\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := token.Parse(tt.in)
			if tt.want != 0 {
				if err != nil || got != tt.want {
					t.Fatalf("Parse(%q) = %d, %v; want %d, nil", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q) = %d, nil; want an error", tt.in, got)
			}
			if !errors.Is(err, token.ErrInvalid) || errors.Is(err, token.ErrStale) {
				t.Errorf("Parse(%q) error %v: want ErrInvalid, not ErrStale", tt.in, err)
			}
			if errors.Is(err, token.ErrZero) != tt.zero {
				t.Errorf("Parse(%q) error %v: errors.Is(ErrZero) = %v, want %v", tt.in, err, !tt.zero, tt.zero)
			}
		})
	}
}

func TestStaleErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *token.StaleError
		want string
	}{
		{
			name: "highest known",
			err:  &token.StaleError{Resource: "job", Token: 1, Highest: 2},
			want: `token: stale: "job" got token 1, highest seen is 2`,
		},
		{
			name: "highest unknown",
			err:  &token.StaleError{Resource: "job", Token: 1},
			want: `token: stale: "job" rejected token 1, a higher token was seen`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if !errors.Is(tt.err, token.ErrStale) || errors.Is(tt.err, token.ErrInvalid) {
				t.Errorf("errors.Is: want ErrStale and not ErrInvalid")
			}
		})
	}
}

// FuzzParse checks that a token has exactly one text form: whatever Parse
// accepts is in range and prints back as the same text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1", "42", "0", "", "01", "-1", "+1", " 1", "9007199254740991",
		"9007199254740992", "18446744073709551615", "18446744073709551616", "1e3", "0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := token.Parse(s)
		if err != nil {
			if !errors.Is(err, token.ErrInvalid) || errors.Is(err, token.ErrStale) {
				t.Fatalf("Parse(%q) error %v: want ErrInvalid, not ErrStale", s, err)
			}
			return
		}
		if tok == 0 || tok > token.Max {
			t.Fatalf("Parse(%q) = %d, out of range", s, tok)
		}
		if got := tok.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q", s, got)
		}
	})
}
