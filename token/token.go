package token

import (
	"fmt"
	"strconv"
)

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
// leading zeros and anything above Max.
func Parse(s string) (Token, error) {
	if s == "" {
		return 0, fmt.Errorf("token: empty")
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("token: %q has a leading zero", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("token: %q is not a decimal number", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || Token(n) > Max {
		return 0, fmt.Errorf("token: %q is above the largest token %d", s, Max)
	}
	if n == 0 {
		return 0, fmt.Errorf("token: zero is not a token")
	}
	return Token(n), nil
}
