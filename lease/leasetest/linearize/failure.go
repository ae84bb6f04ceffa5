package linearize

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// ArtifactsEnv names the environment variable of the directory where Verify
// keeps a failing history (CI keeps that directory); without it, the
// system's temporary directory, which outlives the test.
const ArtifactsEnv = "PICKET_ARTIFACTS"

// reportPlaced is how many of the calls porcupine placed before the one
// that breaks a part the report shows.
const reportPlaced = 12

// opID is a call's index in the history, kept in the Operation's Metadata
// through the partitions so that a report names each call as the history
// file does.
type opID int

func (id opID) String() string { return fmt.Sprintf("#%d", int(id)) }

// numbered returns a copy of history whose operations carry their index.
func numbered(history []porcupine.Operation) []porcupine.Operation {
	ops := slices.Clone(history)
	for i := range ops {
		ops[i].Metadata = opID(i)
	}
	return ops
}

// failingPart is one part of a history that does not check, cut to its
// shortest failing prefix (by call time): the first n-1 calls of the part
// check, the first n do not. The nth call, the culprit, is the one whose
// answer no order fits with those before it.
type failingPart struct {
	name    string
	result  porcupine.CheckResult
	size    int                   // the part's calls
	prefix  []porcupine.Operation // the shortest failing prefix, by call time
	placed  []porcupine.Operation // the longest order porcupine found for prefix, in order
	states  []string              // the model's states after each call of placed
	culprit porcupine.Operation
}

// failingParts checks each part of history (numbered) and cuts every one
// that does not check to its shortest failing prefix.
func failingParts(history []porcupine.Operation, cfg Config, timeout time.Duration) []failingPart {
	m := Model(cfg)
	m.Partition = nil
	var out []failingPart
	for _, part := range Partition(history) {
		res := porcupine.CheckOperationsTimeout(m, part, timeout)
		if res == porcupine.Ok {
			continue
		}
		part = slices.Clone(part)
		slices.SortStableFunc(part, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		fp := failingPart{name: partitionName(part[0]), result: res, size: len(part), prefix: part, culprit: part[len(part)-1]}
		if res == porcupine.Illegal {
			// Invariant: part[:lo] checks (the empty prefix does), part[:hi] does not.
			lo, hi := 0, len(part)
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				if porcupine.CheckOperationsTimeout(m, part[:mid], timeout) == porcupine.Ok {
					lo = mid
				} else {
					hi = mid
				}
			}
			fp.prefix, fp.culprit = part[:hi], part[hi-1]
		}
		_, info := porcupine.CheckOperationsVerbose(m, fp.prefix, timeout)
		fp.placed, fp.states = longestOrder(m, info)
		out = append(out, fp)
	}
	return out
}

// longestOrder returns the longest partial order porcupine found (its first
// partition: the model here has none) and the model's states along it.
func longestOrder(m porcupine.Model, info porcupine.LinearizationInfo) ([]porcupine.Operation, []string) {
	var best []porcupine.Operation
	for _, parts := range info.PartialLinearizationsOperations() {
		for _, lin := range parts {
			if len(lin) > len(best) {
				best = lin
			}
		}
	}
	states := make([]string, len(best))
	s := m.Init()
	for i, op := range best {
		ok, next := m.Step(s, op.Input, op.Output)
		if !ok {
			states[i] = "(the model refuses it here)"
			break
		}
		s = next
		states[i] = m.DescribeState(s)
	}
	return best, states
}

// at formats a monotonic instant of the history (nanoseconds since the
// recorder started), "∞" for a call whose outcome is unknown.
func at(t int64) string {
	if t == forever {
		return "∞"
	}
	return time.Duration(t).String()
}

// describeCall is one call of a report or history file: its index, client,
// real-time interval, part, call and answer.
func describeCall(op porcupine.Operation) string {
	id := ""
	if n, ok := op.Metadata.(opID); ok {
		id = n.String() + " "
	}
	return fmt.Sprintf("%sclient %d [%s, %s] %s", id, op.ClientId, at(op.Call), at(op.Return), describeOperation(op.Input, op.Output))
}

// String reports the part: the culprit, the last calls placed before it
// with the model's state after each, and the other calls of the prefix that
// porcupine could not place or that were in flight when the culprit began.
func (fp failingPart) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "part %s (%s, %d calls): ", fp.name, fp.result, fp.size)
	if fp.result == porcupine.Illegal {
		fmt.Fprintf(&b, "its first %d calls by call time check without the last, not with it:\n", len(fp.prefix))
	} else {
		b.WriteString("undecided within the timeout:\n")
	}
	fmt.Fprintf(&b, "  culprit: %s\n", describeCall(fp.culprit))
	from := max(0, len(fp.placed)-reportPlaced)
	fmt.Fprintf(&b, "  the longest order found places %d calls; its last %d, with the model's state after each:\n",
		len(fp.placed), len(fp.placed)-from)
	for i := from; i < len(fp.placed); i++ {
		fmt.Fprintf(&b, "    %s\n      => %s\n", describeCall(fp.placed[i]), fp.states[i])
	}
	shown := map[any]bool{}
	for _, op := range fp.placed[from:] {
		shown[op.Metadata] = true
	}
	placed := map[any]bool{}
	for _, op := range fp.placed {
		placed[op.Metadata] = true
	}
	b.WriteString("  the other calls of the prefix that the order leaves out or that were in flight at the culprit's call:\n")
	others := 0
	for _, op := range fp.prefix[:len(fp.prefix)-1] {
		if !shown[op.Metadata] && (!placed[op.Metadata] || op.Return > fp.culprit.Call) {
			fmt.Fprintf(&b, "    %s\n", describeCall(op))
			others++
		}
	}
	if others == 0 {
		b.WriteString("    (none)\n")
	}
	return b.String()
}

// report is the text Verify prints and keeps for a failing history.
func report(parts []failingPart) string {
	var b strings.Builder
	for _, fp := range parts {
		b.WriteString(fp.String())
	}
	return b.String()
}

// artifactsDir makes a new directory for the artifacts of test name: under
// $PICKET_ARTIFACTS if set, else under the system's temporary directory.
func artifactsDir(name string) (string, error) {
	base := os.Getenv(ArtifactsEnv)
	if base == "" {
		base = os.TempDir()
	} else if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	clean := strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r < ' ' || strings.ContainsRune(`\:*?"<>|`, r) {
			return '_'
		}
		return r
	}, name)
	return os.MkdirTemp(base, "picket-linearize-"+clean+"-*")
}

// recorded is a call as history.json keeps it: ReadHistory reads it back.
type recorded struct {
	ID       int
	ClientID int
	Call     int64
	Return   int64 // forever (math.MaxInt64) for an unknown outcome not settled
	Input    Input
	Output   Output
}

// keep writes history (numbered) to dir: history.json (ReadHistory reads
// it back), history.txt (one call a line, by call time), failing.txt (the
// report) and visualization.html (porcupine's), and returns the first error.
func keep(dir string, history []porcupine.Operation, cfg Config, timeout time.Duration, rep string) error {
	rs := make([]recorded, len(history))
	for i, op := range history {
		rs[i] = recorded{ID: i, ClientID: op.ClientId, Call: op.Call, Return: op.Return, Input: op.Input.(Input), Output: op.Output.(Output)}
	}
	js, err := json.MarshalIndent(rs, "", "\t")
	if err != nil {
		return err
	}
	byCall := slices.Clone(history)
	slices.SortStableFunc(byCall, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var txt strings.Builder
	for _, op := range byCall {
		fmt.Fprintf(&txt, "%s  (part %s)\n", describeCall(op), partitionName(op))
	}
	for _, f := range []struct{ name, text string }{
		{"history.json", string(js) + "\n"},
		{"history.txt", txt.String()},
		{"failing.txt", rep},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o644); err != nil {
			return err
		}
	}
	m := Model(cfg)
	_, info := porcupine.CheckOperationsVerbose(m, history, timeout)
	return porcupine.VisualizePath(m, info, filepath.Join(dir, "visualization.html"))
}

// ReadHistory reads back a history that Verify kept (its history.json), to
// check it again (Check, Failing), for example after a change to the model.
func ReadHistory(path string) ([]porcupine.Operation, error) {
	js, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rs []recorded
	if err := json.Unmarshal(js, &rs); err != nil {
		return nil, fmt.Errorf("linearize: %s: %w", path, err)
	}
	ops := make([]porcupine.Operation, len(rs))
	for i, r := range rs {
		ops[i] = porcupine.Operation{ClientId: r.ClientID, Input: r.Input, Call: r.Call, Output: r.Output, Return: r.Return}
	}
	return ops, nil
}
