package bench_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/bench"
)

func TestHistogramEmpty(t *testing.T) {
	var h bench.Histogram
	if h.Count() != 0 || h.Quantile(0.5) != 0 || h.Max() != 0 {
		t.Errorf("empty histogram: count %d, p50 %v, max %v; want zeros", h.Count(), h.Quantile(0.5), h.Max())
	}
}

// Quantiles stay within the histogram's resolution of the exact ones, over
// values from nanoseconds to minutes.
func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{
		{"tiny", func() time.Duration { return time.Duration(r.IntN(40)) }},
		{"uniform ms", func() time.Duration { return time.Duration(r.Int64N(int64(10 * time.Millisecond))) }},
		{"log-uniform", func() time.Duration { return time.Duration(1 << r.IntN(36)) }},
		{"constant", func() time.Duration { return 1234567 * time.Nanosecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h bench.Histogram
			samples := make([]time.Duration, 10_000)
			for i := range samples {
				samples[i] = tc.gen()
				h.Record(samples[i])
			}
			slices.Sort(samples)
			if h.Count() != int64(len(samples)) {
				t.Errorf("count %d, want %d", h.Count(), len(samples))
			}
			if h.Max() != samples[len(samples)-1] {
				t.Errorf("max %v, want %v", h.Max(), samples[len(samples)-1])
			}
			for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
				rank := max(int(float64(len(samples))*q+0.999999), 1)
				exact := samples[rank-1]
				got := h.Quantile(q)
				if diff := (got - exact).Abs(); float64(diff) > 0.07*float64(exact)+1 {
					t.Errorf("q%v: %v, exact %v: off by more than 7%%", q, got, exact)
				}
			}
		})
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b, all bench.Histogram
	for i := range 1000 {
		d := time.Duration(i) * time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m bench.Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&bench.Histogram{})
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if m.Quantile(q) != all.Quantile(q) {
			t.Errorf("q%v of merged: %v, of all at once: %v", q, m.Quantile(q), all.Quantile(q))
		}
	}
	if m.Count() != 1000 || m.Max() != 999*time.Microsecond {
		t.Errorf("merged: count %d, max %v; want 1000, 999µs", m.Count(), m.Max())
	}
}

func TestHistogramNegative(t *testing.T) {
	var h bench.Histogram
	h.Record(-time.Second)
	if h.Quantile(1) != 0 || h.Count() != 1 {
		t.Errorf("a negative sample: q1 %v, count %d; want 0, 1", h.Quantile(1), h.Count())
	}
}
