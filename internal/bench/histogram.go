package bench

import (
	"math"
	"math/bits"
	"time"
)

// subBits is the number of bits of each value the Histogram keeps below its
// highest set bit: 16 buckets per power of two, so a bucket is at most
// 1/16 of its lower bound wide and its midpoint within about 3% of any value
// in it.
const subBits = 4

const (
	subBuckets = 1 << subBits
	nBuckets   = (64 - subBits + 1) * subBuckets
)

// Histogram counts durations in log-linear buckets: constant memory (under
// 8 KiB) whatever the number of samples, quantiles within about 3%. The zero
// value is empty and ready. A Histogram is not safe for concurrent use: give
// each client its own and Merge them.
type Histogram struct {
	counts   [nBuckets]uint64
	n        uint64
	min, max time.Duration
}

// Record adds one duration; a negative one counts as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucket(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
}

// Count returns the number of samples.
func (h *Histogram) Count() int64 { return int64(h.n) }

// Max returns the largest sample, exactly (zero when empty).
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the samples: the midpoint
// of the bucket holding the sample of rank ⌈q·n⌉, kept within the smallest
// and largest samples. It returns 0 when the histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, width := bounds(i)
			mid := time.Duration(lo + width/2)
			return min(max(mid, h.min), h.max)
		}
	}
	return h.max
}

// bucket returns the index of the bucket holding v.
func bucket(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(v) - 1 // e ≥ subBits
	mant := (v >> (e - subBits)) & (subBuckets - 1)
	return (e-subBits+1)*subBuckets + int(mant)
}

// bounds returns the lowest value bucket i holds and its width.
func bounds(i int) (lo, width uint64) {
	if i < subBuckets {
		return uint64(i), 1
	}
	e := i/subBuckets + subBits - 1
	mant := uint64(i % subBuckets)
	shift := e - subBits
	return (subBuckets + mant) << shift, 1 << shift
}
