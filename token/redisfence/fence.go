package redisfence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/picketlock/picket/token"
)

// FenceSuffix ends the name of every fence key: FenceKey(key) is key with
// it appended, or "{key}" with it where key has no hash tag. Keep your own
// keys from ending in it.
const FenceSuffix = ":picket-fence"

// MaxFields bounds the field-value pairs of one HSet: a Lua script takes its
// arguments on a stack of about 8,000 slots.
const MaxFields = 1000

// FenceKey returns the key that holds key's highest token. Redis Cluster
// hashes only a key's hash tag (the text between its first "{" and the
// first "}" after it, if not empty) when it has one, so:
//
//   - a key with a hash tag ("{user:42}:name") keeps it: the fence is
//     "{user:42}:name:picket-fence", in the same slot;
//   - a key without one ("jobs:7") is hashed whole: the fence tags it,
//     "{jobs:7}:picket-fence", whose tag is the whole key;
//   - a key without a hash tag but with a "}" ("a}b", "{}x") cannot be
//     tagged whole (a tag ends at the first "}"): no fence key shares its
//     slot, and it is refused (ErrInvalid). Give such a key a hash tag.
//
// Errors: ErrInvalid for an empty key or one of the third kind.
func FenceKey(key string) (string, error) {
	if key == "" {
		return "", invalid("empty key")
	}
	if hasTag(key) {
		return key + FenceSuffix, nil
	}
	if strings.Contains(key, "}") {
		return "", invalid("key %q has a \"}\" but no hash tag: no fence key can share its cluster slot; give it a hash tag, e.g. \"{%s}\"", key, strings.ReplaceAll(key, "}", ""))
	}
	return "{" + key + "}" + FenceSuffix, nil
}

// hasTag reports whether Redis Cluster hashes key by a hash tag: a "{"
// followed, later, by a "}" with at least one byte between them.
func hasTag(key string) bool {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return false
	}
	j := strings.IndexByte(key[i+1:], '}')
	return j > 0
}

// The scripts. KEYS[1] is the data key, KEYS[2] its fence; ARGV[1] the
// token. Each compares first, then writes the data (the one command that can
// fail on the data's type, before anything changed), then raises the
// fence; it answers {1, token} when admitted and {0, highest} when stale.
const (
	compare = `local f = redis.call('GET', KEYS[2])
local h = 0
if f then
  h = tonumber(f)
  if h == nil then return redis.error_reply('picket: fence key ' .. KEYS[2] .. ' does not hold a token') end
end
local t = tonumber(ARGV[1])
if h > t then return {0, f} end
`
	raise = `
redis.call('SET', KEYS[2], ARGV[1])
return {1, ARGV[1]}`
)

var (
	setScript  = redis.NewScript(compare + `redis.call('SET', KEYS[1], ARGV[2])` + raise)
	hsetScript = redis.NewScript(compare + `redis.call('HSET', KEYS[1], unpack(ARGV, 2))` + raise)
	delScript  = redis.NewScript(compare + `redis.call('DEL', KEYS[1])` + raise)
)

// Set sets key to value if t is not lower than the highest token key has
// seen, and raises that to t, in one script: an equal token is admitted (the
// holder may write many times). c is any go-redis client (*redis.Client,
// *redis.ClusterClient, *redis.Ring); ctx bounds the call.
//
// Errors: *token.StaleError (matching token.ErrStale) if a higher token
// was seen: nothing was written, stop; token.ErrZero or an error matching
// token.ErrInvalid for a bad token or key, with nothing sent; Redis's or the
// network's error otherwise — after a network error the write may or may
// not have happened (read the key to learn which), but never with a stale
// token.
func Set(ctx context.Context, c redis.Scripter, key string, t token.Token, value string) error {
	return run(ctx, c, setScript, "set", key, t, value)
}

// HSet sets the hash fields of key (field, value, field, value, ...: at
// most MaxFields pairs) as Set sets a string. A key holding another type is
// Redis's WRONGTYPE error, and neither the data nor the fence changes.
//
// Errors: as Set's, and ErrInvalid for no pairs, an odd count or too many.
func HSet(ctx context.Context, c redis.Scripter, key string, t token.Token, fieldValues ...string) error {
	switch n := len(fieldValues); {
	case n == 0 || n%2 == 1:
		return invalid("hset %q: want field-value pairs, got %d strings", key, n)
	case n/2 > MaxFields:
		return invalid("hset %q: %d pairs, at most %d in one call", key, n/2, MaxFields)
	}
	return run(ctx, c, hsetScript, "hset", key, t, fieldValues...)
}

// Del deletes key if t is not lower than the highest token key has seen,
// and keeps the fence (raised to t), so that a later write with a lower
// token stays stale. Deleting a key that does not exist raises the fence
// all the same.
//
// Errors: as Set's.
func Del(ctx context.Context, c redis.Scripter, key string, t token.Token) error {
	return run(ctx, c, delScript, "del", key, t)
}

// Highest returns the highest token key has admitted, or zero if none.
//
// Errors: ErrInvalid for a bad key; Redis's error.
func Highest(ctx context.Context, c redis.Cmdable, key string) (token.Token, error) {
	fk, err := FenceKey(key)
	if err != nil {
		return 0, err
	}
	s, err := c.Get(ctx, fk).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("redisfence: highest %q: %w", key, err)
	}
	t, err := token.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("redisfence: fence key %q: %w", fk, err)
	}
	return t, nil
}

func run(ctx context.Context, c redis.Scripter, s *redis.Script, op, key string, t token.Token, args ...string) error {
	if err := t.Check(); err != nil {
		return err
	}
	fk, err := FenceKey(key)
	if err != nil {
		return err
	}
	argv := make([]any, 0, 1+len(args))
	argv = append(argv, t.String())
	for _, a := range args {
		argv = append(argv, a)
	}
	res, err := s.Run(ctx, c, []string{key, fk}, argv...).Slice()
	if err != nil {
		return fmt.Errorf("redisfence: %s %q: %w", op, key, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("redisfence: %s %q: the script answered %v", op, key, res)
	}
	if ok, _ := res[0].(int64); ok == 1 {
		return nil
	}
	h, _ := res[1].(string)
	highest, err := token.Parse(h)
	if err != nil {
		return fmt.Errorf("redisfence: %s %q: fence key %q: %w", op, key, fk, err)
	}
	return &token.StaleError{Resource: key, Token: t, Highest: highest}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("redisfence: %s: %w", fmt.Sprintf(format, args...), token.ErrInvalid)
}
