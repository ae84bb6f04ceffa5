package bench

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The chart's geometry, in SVG user units.
const (
	chartW, chartH                   = 940, 450
	padLeft, padRight, padTop, padBo = 80, 330, 60, 60
)

// seriesColor is the color of the chart's i-th line.
func seriesColor(i int) string {
	colors := [...]string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}
	return colors[i%len(colors)]
}

// WriteChart draws rows as an SVG line chart of grants per second (y, from
// zero) against clients (x, on a logarithmic scale), one line per workload,
// under title. It writes a complete, standalone SVG document and returns
// the first write error.
func WriteChart(w io.Writer, title string, rows []Row) error {
	bw := bufio.NewWriter(w)
	var series []string
	var clients []int
	top := 0.0
	for _, r := range rows {
		if !slices.Contains(series, r.Names) {
			series = append(series, r.Names)
		}
		if !slices.Contains(clients, r.Clients) {
			clients = append(clients, r.Clients)
		}
		top = max(top, r.GrantsPerSec)
	}
	slices.Sort(clients)
	step := niceStep(top / 5)
	yMax := step * math.Max(1, math.Ceil(top/step))

	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBo)
	x := func(c int) float64 {
		if len(clients) < 2 {
			return padLeft + plotW/2
		}
		lo, hi := math.Log2(float64(clients[0])), math.Log2(float64(clients[len(clients)-1]))
		return padLeft + plotW*(math.Log2(float64(c))-lo)/(hi-lo)
	}
	y := func(v float64) float64 { return padTop + plotH*(1-v/yMax) }

	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>
`, chartW, chartH, chartW, chartH, padLeft, esc(title))

	// Horizontal grid lines with the grants/s scale.
	for k := 0.0; k*step <= yMax*1.0001; k++ {
		v := k * step
		fmt.Fprintf(bw, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>
<text x="%d" y="%.1f" text-anchor="end">%s</text>
`, padLeft, y(v), padLeft+plotW, y(v), padLeft-8, y(v)+4, esc(short(v)))
	}
	// Vertical ticks: one per client count.
	for _, c := range clients {
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#eee"/>
<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>
`, x(c), padTop, x(c), padTop+plotH, x(c), padTop+plotH+20, c)
	}
	fmt.Fprintf(bw, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>
<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="black"/>
<text x="%.1f" y="%d" text-anchor="middle">clients (log scale)</text>
<text x="20" y="%.1f" text-anchor="middle" transform="rotate(-90 20 %.1f)">grants/s</text>
`, padLeft, padTop+plotH, padLeft+plotW, padTop+plotH,
		padLeft, padTop, padLeft, padTop+plotH,
		padLeft+plotW/2, chartH-15,
		padTop+plotH/2, padTop+plotH/2)

	for i, name := range series {
		color := seriesColor(i)
		var pts []string
		var dots strings.Builder
		for _, r := range rows {
			if r.Names != name {
				continue
			}
			px, py := x(r.Clients), y(r.GrantsPerSec)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
			tip := fmt.Sprintf("%s, %d clients: %s grants/s", name, r.Clients, strconv.FormatFloat(r.GrantsPerSec, 'f', 0, 64))
			dots.WriteString(marker(i, px, py, color, tip))
		}
		if len(pts) > 1 {
			fmt.Fprintf(bw, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>
`, color, strings.Join(pts, " "))
		}
		bw.WriteString(dots.String())
		ly := padTop + 10 + 22*i
		label := name
		if d := Describe(name); d != name {
			label += ": " + d
		}
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="3"/>
`, padLeft+plotW+15, ly, padLeft+plotW+45, ly, color)
		bw.WriteString(marker(i, padLeft+plotW+30, float64(ly), color, label))
		fmt.Fprintf(bw, `<text x="%.1f" y="%d">%s</text>
`, padLeft+plotW+52, ly+4, esc(label))
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// marker draws the point of series i at (x, y): a circle, a square, a
// triangle or a diamond, so that the workloads stay apart without colour.
func marker(i int, x, y float64, color, tip string) string {
	title := "<title>" + esc(tip) + "</title>"
	switch i % 4 {
	case 1:
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s">%s</rect>
`, x-4, y-4, color, title)
	case 2:
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s">%s</polygon>
`, x, y-5, x-5, y+4, x+5, y+4, color, title)
	case 3:
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s">%s</polygon>
`, x, y-5, x+5, y, x, y+5, x-5, y, color, title)
	}
	return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s">%s</circle>
`, x, y, color, title)
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short renders a scale value: 1500 as "1.5k", 2000000 as "2M".
func short(v float64) string {
	f := func(x float64) string { return strconv.FormatFloat(math.Round(x*1000)/1000, 'f', -1, 64) }
	switch {
	case v >= 1e6:
		return f(v/1e6) + "M"
	case v >= 1e3:
		return f(v/1e3) + "k"
	}
	return f(v)
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
