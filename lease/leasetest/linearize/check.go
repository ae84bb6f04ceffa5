package linearize

import (
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// state is the model's state in any partition; each partition uses one part.
type state struct {
	lease  leaseState
	kv     kvState
	tokens tokenState
}

func (s state) equal(o state) bool {
	return s.lease == o.lease && s.kv == o.kv && s.tokens.equal(o.tokens)
}

func (s state) hash() uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%+v|%+v|%d|%d", s.lease, s.kv, len(s.tokens.granted), len(s.tokens.shown))
	return h.Sum64()
}

func (s state) String() string {
	var parts []string
	if s.lease != (leaseState{}) {
		l := s.lease
		if l.Held {
			parts = append(parts, fmt.Sprintf("held by %s (owner %q) token %d ttl %v until %v", l.Holder, l.Owner, l.Token, l.TTL, l.Expires))
		} else {
			parts = append(parts, "free")
		}
		parts = append(parts, fmt.Sprintf("last token %d, store time %v", l.Last, l.Now))
	}
	if s.kv != (kvState{}) {
		parts = append(parts, fmt.Sprintf("highest %d value %q", s.kv.Highest, s.kv.Value))
	}
	if t := s.tokens; len(t.granted) > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens seen (highest %d), %d of them from lost grants",
			len(t.granted), t.granted[len(t.granted)-1].Token, len(t.shown)))
	}
	return strings.Join(parts, "; ")
}

// step returns the states possible after the call in its partition.
func step(cfg Config, s state, input any, out Output) []any {
	var next []any
	switch in := input.(type) {
	case tokenInput:
		for _, t := range stepTokens(s.tokens, in, out) {
			next = append(next, state{tokens: t})
		}
	case Input:
		if in.Kind.isLease() {
			for _, l := range stepLease(cfg, s.lease, in, out) {
				next = append(next, state{lease: l})
			}
		} else {
			for _, kv := range stepKV(s.kv, in, out) {
				next = append(next, state{kv: kv})
			}
		}
	}
	return next
}

// Model returns the porcupine model of a lease store configured like cfg
// (see the package doc), with its partitions. Operations must carry an Input
// and an Output of this package, as a Recorder records them.
func Model(cfg Config) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: Partition,
		Init:      func() []any { return []any{state{}} },
		Step: func(s, in, out any) []any {
			return step(cfg, s.(state), in, out.(Output))
		},
		Equal:             func(a, b any) bool { return a.(state).equal(b.(state)) },
		Hash:              func(s any) uint64 { return s.(state).hash() },
		DescribeOperation: describeOperation,
		DescribeState:     func(s any) string { return s.(state).String() },
	}
	return nm.ToModel()
}

// Partition cuts a history into parts that can be checked apart: one per
// lease name, one per fenced key, and one with every grant, for the order of
// tokens across names.
func Partition(history []porcupine.Operation) [][]porcupine.Operation {
	parts := map[string][]porcupine.Operation{}
	for _, op := range history {
		in := op.Input.(Input)
		key := "kv\x00" + in.Name
		if in.Kind.isLease() {
			key = "lease\x00" + in.Name
		}
		parts[key] = append(parts[key], op)
	}
	if t := tokenPartition(history); len(t) > 0 {
		parts["tokens"] = t
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, parts[k])
	}
	return out
}

// partitionName names the part of a history that op belongs to, as
// Partition cuts it.
func partitionName(op porcupine.Operation) string {
	switch in := op.Input.(type) {
	case tokenInput:
		return "tokens"
	case Input:
		if in.Kind.isLease() {
			return fmt.Sprintf("lease %q", in.Name)
		}
		return fmt.Sprintf("key %q", in.Name)
	}
	return "?"
}

// Failing checks each part of history on its own and names those that are
// not linearizable (or not decided within timeout): "tokens", lease "name"
// or key "key". It says which promise a history broke.
func Failing(history []porcupine.Operation, cfg Config, timeout time.Duration) []string {
	m := Model(cfg)
	m.Partition = nil
	var failing []string
	for _, part := range Partition(history) {
		if res := porcupine.CheckOperationsTimeout(m, part, timeout); res != porcupine.Ok {
			failing = append(failing, partitionName(part[0])+": "+string(res))
		}
	}
	return failing
}

// Check asks porcupine whether history is linearizable under the model for
// cfg, giving up after timeout (then the answer is porcupine.Unknown).
func Check(history []porcupine.Operation, cfg Config, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(Model(cfg), history, timeout)
}

// Visualize checks history again, collecting what porcupine's visualization
// needs, and writes it as an HTML file to a new file in the system's
// temporary directory (which outlives the test), whose path it returns.
func Visualize(history []porcupine.Operation, cfg Config, timeout time.Duration) (string, error) {
	m := Model(cfg)
	_, info := porcupine.CheckOperationsVerbose(m, history, timeout)
	f, err := os.CreateTemp("", "picket-linearize-*.html")
	if err != nil {
		return "", err
	}
	path := f.Name()
	f.Close()
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		return "", err
	}
	return path, nil
}

// Verify fails t unless porcupine finds history linearizable within timeout.
// On failure it prints each part of the history that does not check, cut
// to its shortest failing prefix: the call that breaks it, the last calls
// porcupine could place before it with the model's state after each, and
// the calls in flight beside it. It keeps the whole history (history.json,
// which ReadHistory reads back, and history.txt), that report (failing.txt)
// and porcupine's visualization (visualization.html) in a new directory
// under $PICKET_ARTIFACTS, or the system's temporary directory, and logs
// its path.
func Verify(t testing.TB, history []porcupine.Operation, cfg Config, timeout time.Duration) {
	t.Helper()
	res := Check(history, cfg, timeout)
	if res == porcupine.Ok {
		return
	}
	history = numbered(history)
	parts := failingParts(history, cfg, timeout)
	names := make([]string, len(parts))
	for i, fp := range parts {
		names[i] = fp.name + ": " + string(fp.result)
	}
	rep := report(parts)
	t.Errorf("porcupine: the history of %d operations is %s, want Ok; failing parts: %q\n%s",
		len(history), res, names, rep)
	dir, err := artifactsDir(t.Name())
	if err == nil {
		err = keep(dir, history, cfg, timeout, rep)
	}
	if err != nil {
		t.Errorf("keeping the history: %v", err)
	}
	if dir != "" {
		t.Logf("the history, this report and porcupine's visualization are kept in %s", dir)
	}
}
