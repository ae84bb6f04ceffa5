package bench_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/bench"
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
	var rows []bench.Row
	for i, c := range []int{1, 4, 16, 64} {
		rows = append(rows,
			bench.Row{Names: bench.Distinct, Clients: c, GrantsPerSec: float64(1000 * (i + 1)), P50: time.Millisecond},
			bench.Row{Names: bench.Hot, Clients: c, GrantsPerSec: 500})
	}
	for _, tc := range []struct {
		name      string
		rows      []bench.Row
		lines     int
		points    int // one marker with a tooltip per row
		series    int // one legend entry, marker included, per workload
		mustHave  []string
		titleText string
	}{
		{"two series", rows, 2, 8, 2, []string{">distinct: acquire+release, own name<", ">hot: one hot name, hand-over<", ">64<", "4k"}, "picket <bench> & co"},
		{"one point", rows[:1], 0, 1, 1, []string{">distinct: acquire+release, own name<"}, "one"},
		{"no rows", nil, 0, 0, 0, nil, "empty"},
		{"all zero", []bench.Row{{Names: bench.Fresh, Clients: 2}}, 0, 1, 1, []string{">fresh: fresh grants, never released<"}, "zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := bench.WriteChart(&buf, tc.titleText, tc.rows); err != nil {
				t.Fatal(err)
			}
			count := wellFormed(t, buf.Bytes())
			if count["svg"] != 1 || count["polyline"] != tc.lines || count["title"] != tc.points+tc.series {
				t.Errorf("elements %v: want 1 svg, %d polylines, %d titled markers", count, tc.lines, tc.points+tc.series)
			}
			// The first workload's markers are circles, the second's squares
			// (the background is one more rect): told apart without colour.
			if tc.series == 2 && (count["circle"] != 4+1 || count["rect"] != 1+4+1) {
				t.Errorf("elements %v: want 5 circles and 6 rects (4 points and a legend marker each)", count)
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
