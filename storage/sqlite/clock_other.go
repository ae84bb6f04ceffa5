//go:build !linux

package sqlite

import "time"

func clockEpoch() (string, error) { return "", nil }

func bootTime() time.Duration { return time.Duration(time.Now().UnixNano()) }
