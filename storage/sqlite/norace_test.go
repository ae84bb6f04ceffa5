//go:build !race

package sqlite_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
