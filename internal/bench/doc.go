// Package bench is the runner behind "picket bench" and the peer
// comparison (benchmarks/peers): it measures grant throughput, picket's
// headline number, over any lease.Store. It is internal: its API may change
// with the command that uses it. The idea behind the workloads is in the
// doc of the benchmarks directory (benchmarks/doc.go) and in
// docs/performance.md.
//
// Three workloads, each run with a number of concurrent clients: Distinct
// (each client acquires and releases its own name), Fresh (a new name each
// time, never released) and Hot (every client on one name: the hand-over).
//
// Run drives any lease.Store (an embedded storage/sqlite file, an
// httpapi.Client, storage/memory) through a sweep of workloads and client
// counts, one step each, every step bounded in time (Config.Duration) and in
// operations (Config.MaxOps), and returns one Row per step. Progress reports
// the start and end of each step. WriteChart draws grants per second
// against clients as an SVG image. Latency comes from a log-linear
// Histogram (about 3% resolution, a few kilobytes per client). The package
// holds no mutable state: its defaults are constants and functions.
package bench
