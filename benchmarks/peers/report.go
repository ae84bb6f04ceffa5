package peers

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/picketlock/picket/internal/bench"
)

// WriteMarkdown writes results as a markdown table, one line per step with
// its durability in a few words, then a legend: each system's version and
// durability in full, what the workloads measure, and the first error of
// each step that had errors. Targets that failed come last in the table.
func WriteMarkdown(w io.Writer, results []Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "| system | durability | workload | clients | rate | p50 ms | p99 ms | errors | server CPU µs/request |")
	fmt.Fprintln(bw, "|---|---|---|---:|---:|---:|---:|---:|---:|")
	var failed, systems []Result
	var notes []string
	for _, r := range results {
		if !slices.ContainsFunc(systems, func(o Result) bool { return o.Target == r.Target }) {
			systems = append(systems, r)
		}
		if r.Err != nil {
			failed = append(failed, r)
			continue
		}
		rate, unit := Rate(r)
		cpu := ""
		if r.ServerCPU > 0 {
			cpu = strconv.FormatFloat(float64(r.ServerCPU)/float64(time.Microsecond), 'f', 1, 64)
		}
		errs := strconv.FormatInt(r.Errors, 10)
		if r.FirstError != nil {
			notes = append(notes, fmt.Sprintf("%s, %s, %d clients: %d errors, the first: %v", r.Target, r.Names, r.Clients, r.Errors, r.FirstError))
			errs += fmt.Sprintf(" [%d]", len(notes))
		}
		spread := ""
		if r.Rounds > 1 {
			spread = fmt.Sprintf(" (%s–%s)", Thousands(r.Low), Thousands(r.High))
		}
		fmt.Fprintf(bw, "| %s | %s | %s | %d | %s %s%s | %s | %s | %s | %s |\n",
			cell(r.Target), shortDurability(r), r.Names, r.Clients, Thousands(rate), unit, spread, ms3(r.P50), ms3(r.P99), errs, cpu)
	}
	for _, r := range failed {
		fmt.Fprintf(bw, "| %s | %s | — | — | **failed**: %s | | | | |\n", cell(r.Target), shortDurability(r), cell(r.Err.Error()))
	}
	fmt.Fprintln(bw)
	for _, r := range systems {
		v := ""
		if r.Version != "" {
			v = " (" + cell(r.Version) + ")"
		}
		fmt.Fprintf(bw, "- **%s**%s: %s.\n", cell(r.Target), v, cell(r.Durability))
	}
	rounds := 0
	for _, r := range results {
		rounds = max(rounds, r.Rounds)
	}
	if rounds > 1 {
		fmt.Fprintf(bw, "- Rounds: the suite ran %d times, the targets forwards, then backwards; each rate is the median round's "+
			"(its p50, p99, errors and CPU are that round's), in parentheses the lowest and highest of the rounds.\n", rounds)
	}
	fmt.Fprintf(bw, "- Workloads: *distinct*, %s: cycles/s, p50/p99 of the acquire; *fresh*, %s: grants/s, p50/p99 of the acquire; "+
		"*hot*, %s: hand-overs/s, p50/p99 from a release being sent to the next grant (Redis and PostgreSQL cannot wait: their clients poll every 1–2 ms). "+
		"Server CPU is the server process's user+system time over the step's requests (a cycle is two), for single-process servers.\n",
		bench.Describe(bench.Distinct), bench.Describe(bench.Fresh), bench.Describe(bench.Hot))
	if len(notes) > 0 {
		fmt.Fprintln(bw)
		for i, n := range notes {
			fmt.Fprintf(bw, "%d. %s\n", i+1, cell(n))
		}
	}
	return bw.Flush()
}

// shortDurability is a row's durability cell: bold when it is not durable.
func shortDurability(r Result) string {
	s := cell(cmpOr(r.Short, r.Durability))
	if !r.Durable && !r.Baseline {
		s = "**" + s + "**"
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// cell makes s safe inside a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func ms3(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Thousands renders v rounded, with commas: 12345.6 as "12,346".
func Thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// The chart's geometry, in SVG user units.
const (
	barH, barGap, labelW, barAreaW, valueW = 16, 4, 300, 440, 140
)

// The chart's colours.
const (
	colorPicket   = "#d62728"
	colorPeer     = "#1f77b4"
	colorBaseline = "#aaaaaa"
)

// WriteChart draws results as horizontal bars, one section per workload:
// for each target, its rate at the largest client count it ran (the fsync
// floor in the first section). Rows that are not durable are drawn hatched
// and labelled so.
func WriteChart(w io.Writer, title string, results []Result) error {
	type bar struct {
		label, unit, fill string
		rate              float64
	}
	type section struct {
		head string
		bars []bar
	}
	var order []string
	best := map[string]Result{} // workload + target → the row at the most clients
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		k := r.Names + "\x00" + r.Target
		if old, ok := best[k]; !ok || r.Clients > old.Clients {
			if !ok {
				order = append(order, k)
			}
			best[k] = r
		}
	}
	var sections []section
	index := map[string]int{}
	for _, k := range order {
		r := best[k]
		w := r.Names
		if w == "fsync" {
			w = bench.Distinct // the floor sits with the first section
		}
		i, ok := index[w]
		if !ok {
			i = len(sections)
			index[w] = i
			sections = append(sections, section{head: w})
		}
		rate, unit := Rate(r)
		label := fmt.Sprintf("%s, %d %s", r.Target, r.Clients, plural(r.Clients, "client", "clients"))
		fill := colorPeer
		switch {
		case r.Baseline:
			fill = colorBaseline
		case !r.Durable:
			fill, label = "url(#hatch)", label+" (not durable)"
		case strings.HasPrefix(r.Target, "picket"):
			fill = colorPicket
		}
		sections[i].bars = append(sections[i].bars, bar{label: label, rate: rate, unit: unit, fill: fill})
	}
	height := 76
	for _, s := range sections {
		height += 34 + len(s.bars)*(barH+barGap)
	}
	width := labelW + barAreaW + valueW
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="3"/></pattern></defs>
<rect width="100%%" height="100%%" fill="white"/>
<text x="10" y="24" font-size="15" font-weight="bold">%s</text>
<rect x="10" y="38" width="14" height="12" fill="%s"/><text x="30" y="49">picket</text>
<rect x="90" y="38" width="14" height="12" fill="%s"/><text x="110" y="49">durable peer</text>
<rect x="210" y="38" width="14" height="12" fill="url(#hatch)" stroke="#555" stroke-width="0.5"/><text x="230" y="49">not durable</text>
<rect x="320" y="38" width="14" height="12" fill="%s"/><text x="340" y="49">baseline (fsync floor, trivial HTTP handler)</text>
`, width, height, width, height, esc(title), colorPicket, colorPeer, colorBaseline)
	y := 66
	for _, s := range sections {
		top := 0.0
		for _, b := range s.bars {
			top = max(top, b.rate)
		}
		fmt.Fprintf(bw, `<text x="10" y="%d" font-weight="bold">%s (%s)</text>
`, y+14, esc(s.head), esc(bench.Describe(s.head)))
		y += 24
		for _, b := range s.bars {
			wpx := 0.0
			if top > 0 {
				wpx = float64(barAreaW) * b.rate / top
			}
			fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="end">%s</text>
<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s" stroke="#555" stroke-width="0.5"><title>%s: %s %s</title></rect>
<text x="%.1f" y="%d">%s %s</text>
`, labelW-6, y+barH-4, esc(b.label),
				labelW, y, wpx, barH, b.fill, esc(b.label), Thousands(b.rate), esc(b.unit),
				float64(labelW)+wpx+6, y+barH-4, Thousands(b.rate), esc(b.unit))
			y += barH + barGap
		}
		y += 10
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

func esc(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
