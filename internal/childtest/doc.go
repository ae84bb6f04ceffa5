// Package childtest runs a test binary's own functions as child processes:
// the one harness of the tests that need a real second process (a crash by
// SIGKILL, a power loss under a fault file system, a pause by SIGSTOP,
// several processes on one file, the picket command itself).
//
// A test package registers the functions a child may run and hands its
// TestMain to Main:
//
//	func init() { childtest.Register("grant-loop", grantLoop) }
//
//	func TestMain(m *testing.M) { childtest.Main(m) }
//
// A test then starts one with Start (a running child whose output lines it
// reads, whose stdin it writes, which it can SIGKILL, SIGSTOP and SIGCONT
// and wait for within a bound) or builds its command with Command (to run it
// with exec.Cmd's Output and the like). Either way the child is the test
// binary again, with $PICKET_CHILDTEST naming the function, which Main runs
// instead of the tests; arguments reach it in its environment (Options.Env)
// or its command line (Options.Args, read back with Args). Every child that
// Start began is killed and waited for by t.Cleanup.
//
// It imports the standard library only, so the library module that holds it
// gains no dependency; internal/ lets every module of the repository (they
// share the module path's prefix) import it.
package childtest
