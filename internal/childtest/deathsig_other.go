//go:build !linux

package childtest

import "syscall"

// orphanGuard: no parent-death signal here; Cleanup kills the children.
func orphanGuard(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
