//go:build !linux

package sqlite

import "time"

func clockEpoch() string { return "" }

func bootTime() time.Duration { return time.Duration(time.Now().UnixNano()) }
