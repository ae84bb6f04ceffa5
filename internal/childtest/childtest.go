package childtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Var is the environment variable that names the function a child runs.
const Var = "PICKET_CHILDTEST"

// noTests is the first argument of every child: should Main not be called
// (a binary without the TestMain), the child runs no test.
const noTests = "-test.run=^$"

var funcs = map[string]func() int{}

// Register names fn, the body of a child: it runs in place of the tests and
// its result is the child's exit status. Call it from an init function;
// registering one name twice panics.
func Register(name string, fn func() int) {
	if _, ok := funcs[name]; ok {
		panic(fmt.Sprintf("childtest: %q registered twice", name))
	}
	funcs[name] = fn
}

// Main runs the function that $PICKET_CHILDTEST names and exits with its
// status; without the variable it runs the tests. Call it from TestMain.
func Main(m *testing.M) {
	if name := os.Getenv(Var); name != "" {
		os.Exit(Run(name))
	}
	os.Exit(m.Run())
}

// Run runs the registered function name, for a TestMain that does more than
// Main; an unknown name is exit status 2, saying which names there are.
func Run(name string) int {
	fn, ok := funcs[name]
	if !ok {
		names := make([]string, 0, len(funcs))
		for n := range funcs {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "childtest: no function %q (registered: %s)\n", name, strings.Join(names, ", "))
		return 2
	}
	return fn()
}

// Args returns the child's command-line arguments: Options.Args as given.
func Args() []string {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == noTests {
		args = args[1:]
	}
	return args
}

// Options say how a child is started. The zero value starts the test
// binary itself with this process's environment and stderr.
type Options struct {
	Args []string // its command line, read back with Args
	Env  []string // added to this process's environment ("K=V")
	// Wrap is a command the child runs under, such as unshare(1) with its
	// flags: Wrap[0] runs with Wrap[1:], then the test binary and its
	// arguments.
	Wrap []string
	// Exe is the binary to run instead of this one (a copy of it that
	// another user may execute).
	Exe         string
	Dir         string
	SysProcAttr *syscall.SysProcAttr
	Stdin       io.Reader // Command only: Start always gives a pipe (Proc.Send)
	Stderr      io.Writer // nil: this process's stderr (Start: unless StderrLines)
	// StderrLines makes Start read the child's lines from its stderr
	// instead of its stdout (a server that logs there); its stdout then goes
	// to Stdout, or nowhere.
	StderrLines bool
	Stdout      io.Writer
	// OnLine, if set, is given each complete line of the child as it comes,
	// instead of queueing it for Proc.Line.
	OnLine func(line string)
}

// Command returns the command that runs the registered function name in a
// child, bound to ctx (nil: not bound), not started. With name "" it runs
// o.Exe, another program, with o.Args as they are (Start then gives it the
// same harness).
func Command(t testing.TB, ctx context.Context, name string, o Options) *exec.Cmd {
	t.Helper()
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			t.Fatalf("childtest: %v", err)
		}
	}
	argv := append(append([]string{}, o.Wrap...), exe)
	if name != "" {
		argv = append(argv, noTests)
	} else if o.Exe == "" {
		t.Fatal("childtest: no function named and no program")
	}
	argv = append(argv, o.Args...)
	var cmd *exec.Cmd
	if ctx != nil {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Env = append(os.Environ(), o.Env...)
	if name != "" {
		cmd.Env = append(cmd.Env, Var+"="+name)
	}
	cmd.Dir = o.Dir
	cmd.SysProcAttr = orphanGuard(o.SysProcAttr) // deathsig_linux.go
	cmd.Stdin = o.Stdin
	cmd.Stdout = o.Stdout
	cmd.Stderr = o.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	return cmd
}
