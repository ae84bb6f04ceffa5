package benchmarks_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/benchmarks"
)

// wellFormed decodes the whole of doc as XML and counts its elements by name.
func wellFormed(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	count := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return count
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			count[se.Name.Local]++
		}
	}
}

func TestWriteChart(t *testing.T) {
	var rows []benchmarks.Row
	for i, c := range []int{1, 4, 16, 64} {
		rows = append(rows,
			benchmarks.Row{Names: benchmarks.Distinct, Clients: c, GrantsPerSec: float64(1000 * (i + 1)), P50: time.Millisecond},
			benchmarks.Row{Names: benchmarks.Hot, Clients: c, GrantsPerSec: 500})
	}
	for _, tc := range []struct {
		name      string
		rows      []benchmarks.Row
		lines     int
		circles   int
		mustHave  []string
		titleText string
	}{
		{"two series", rows, 2, 8, []string{">distinct<", ">hot<", ">64<", "4k"}, "picket <bench> & co"},
		{"one point", rows[:1], 0, 1, []string{">distinct<"}, "one"},
		{"no rows", nil, 0, 0, nil, "empty"},
		{"all zero", []benchmarks.Row{{Names: benchmarks.Fresh, Clients: 2}}, 0, 1, nil, "zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := benchmarks.WriteChart(&buf, tc.titleText, tc.rows); err != nil {
				t.Fatal(err)
			}
			count := wellFormed(t, buf.Bytes())
			if count["svg"] != 1 || count["polyline"] != tc.lines || count["circle"] != tc.circles {
				t.Errorf("elements %v: want 1 svg, %d polylines, %d circles", count, tc.lines, tc.circles)
			}
			for _, s := range tc.mustHave {
				if !strings.Contains(buf.String(), s) {
					t.Errorf("chart lacks %q", s)
				}
			}
			if strings.Contains(buf.String(), "NaN") || strings.Contains(buf.String(), "Inf") {
				t.Errorf("chart has a NaN or Inf coordinate:\n%s", buf.String())
			}
		})
	}
}
