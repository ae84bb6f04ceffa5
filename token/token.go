package token

import "strconv"

// Token is a fencing token: a number handed out with a lease grant, strictly
// greater than every token handed out before it. Zero means "no token" and is
// never granted.
type Token uint64

// Max is the largest token picket hands out: 2^53 - 1, so that JSON clients in
// any language (JavaScript numbers are doubles) read every token exactly.
const Max Token = 1<<53 - 1

// String returns the decimal form of t.
func (t Token) String() string { return strconv.FormatUint(uint64(t), 10) }

// Parse reads the decimal form of a token. It rejects zero, signs, spaces,
// leading zeros and anything above Max, so that a token has exactly one text
// form: Parse(s) succeeds only if t.String() == s. Every error matches
// ErrInvalid; the zero token's error is ErrZero.
func Parse(s string) (Token, error) {
	if s == "" {
		return 0, invalid("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, invalid("%q is not a decimal number", s)
		}
	}
	if s == "0" {
		return 0, ErrZero
	}
	if s[0] == '0' {
		return 0, invalid("%q has a leading zero", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || Token(n) > Max {
		return 0, invalid("%q is above the largest token %d", s, uint64(Max))
	}
	return Token(n), nil
}
