//go:build !unix

package main

import "time"

// selfCPU is not measured here: bench -procs prints 0 µs per grant.
func selfCPU() time.Duration { return 0 }
