//go:build !linux

package token

import "os"

const haveOFD = false

func tryLock(*os.File, bool) (bool, error) { return false, ErrUnsupported }
