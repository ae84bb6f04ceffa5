package childtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ErrTimeout is Line's and Wait's error when their bound passed first.
var ErrTimeout = errors.New("childtest: timed out")

// Proc is a running child started by Start. Its methods are safe for
// concurrent use.
type Proc struct {
	Cmd *exec.Cmd // started; call Proc.Wait, never Cmd.Wait (Proc waits for it)

	stdin  io.WriteCloser
	exited chan struct{} // closed once the process has been waited for
	eof    chan struct{} // closed once its output (stdout or stderr) ended

	mu      sync.Mutex
	out     []byte   // everything it wrote on the read stream
	queue   []string // complete lines not yet taken by Line
	more    chan struct{}
	waitErr error
}

// Start starts the registered function name in a child bound to ctx (nil:
// not bound) and reads its output lines as they come (complete lines only:
// a line cut short by a kill is in Output, never a Line). Its stdin is a
// pipe (Send, CloseStdin). t.Cleanup continues it if stopped, kills it with
// SIGKILL and waits for it.
func Start(t testing.TB, ctx context.Context, name string, o Options) *Proc {
	t.Helper()
	stdin := o.Stdin
	o.Stdin = nil
	cmd := Command(t, ctx, name, o)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("childtest: %v", err)
	}
	if o.StderrLines {
		cmd.Stderr = w
	} else {
		cmd.Stdout = w
	}
	p := &Proc{Cmd: cmd, exited: make(chan struct{}), eof: make(chan struct{}), more: make(chan struct{}, 1)}
	if stdin != nil {
		cmd.Stdin = stdin
	} else if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatalf("childtest: %v", err)
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("childtest: start %s: %v", name, err)
	}
	go p.read(r, o.OnLine)
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Cont()
		p.Kill()
		<-p.exited
		p.CloseStdin()
	})
	return p
}

func (p *Proc) read(r *os.File, onLine func(string)) {
	defer close(p.eof)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		p.mu.Lock()
		p.out = append(p.out, line...)
		complete := err == nil
		if complete && onLine == nil {
			p.queue = append(p.queue, line[:len(line)-1])
		}
		p.mu.Unlock()
		if complete && onLine != nil {
			onLine(line[:len(line)-1])
		}
		select {
		case p.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// Line returns the child's next complete line, waiting at most limit for
// it (0: no bound): io.EOF once its output ended, ErrTimeout after limit.
func (p *Proc) Line(limit time.Duration) (string, error) {
	timeout, stop := bound(limit)
	defer stop()
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			l := p.queue[0]
			p.queue = p.queue[1:]
			p.mu.Unlock()
			return l, nil
		}
		p.mu.Unlock()
		select {
		case <-p.eof:
			p.mu.Lock()
			n := len(p.queue)
			p.mu.Unlock()
			if n == 0 {
				return "", io.EOF
			}
		case <-p.more:
		case <-timeout:
			return "", fmt.Errorf("%w after %v waiting for a line of %v", ErrTimeout, limit, p.Cmd.Args)
		}
	}
}

// Output returns everything the child wrote on the stream Line reads, so
// far, the last line possibly cut short.
func (p *Proc) Output() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.out...)
}

// Send writes line and a newline to the child's stdin.
func (p *Proc) Send(line string) error {
	if p.stdin == nil {
		return errors.New("childtest: stdin closed")
	}
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// CloseStdin closes the child's stdin (it reads end of file).
func (p *Proc) CloseStdin() {
	if p.stdin != nil {
		p.stdin.Close()
	}
}

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Signal sends sig to the child (nothing once it has been waited for).
func (p *Proc) Signal(sig os.Signal) error { return p.Cmd.Process.Signal(sig) }

// Kill sends SIGKILL.
func (p *Proc) Kill() error { return p.Signal(syscall.SIGKILL) }

// Stop sends SIGSTOP.
func (p *Proc) Stop() error { return p.Signal(syscall.SIGSTOP) }

// Cont sends SIGCONT.
func (p *Proc) Cont() error { return p.Signal(syscall.SIGCONT) }

// Exited is closed once the child has exited and been waited for.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Wait waits at most limit (0: no bound) for the child to exit, and then
// for the end of its output (a second more at most: a grandchild may hold
// it), and returns exec.Cmd.Wait's error. After limit it kills the child,
// waits for it, and returns ErrTimeout.
func (p *Proc) Wait(limit time.Duration) error {
	timeout, stop := bound(limit)
	defer stop()
	select {
	case <-p.exited:
	case <-timeout:
		p.Cont()
		p.Kill()
		<-p.exited
		return fmt.Errorf("%w: %v did not exit within %v", ErrTimeout, p.Cmd.Args, limit)
	}
	select {
	case <-p.eof:
	case <-time.After(time.Second):
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Killed reports whether the child, waited for, died of SIGKILL.
func (p *Proc) Killed() bool {
	select {
	case <-p.exited:
	default:
		return false
	}
	ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// bound returns a channel that receives once limit has passed (never, for
// 0) and the function that stops its timer.
func bound(limit time.Duration) (<-chan time.Time, func() bool) {
	if limit <= 0 {
		return nil, func() bool { return false }
	}
	timer := time.NewTimer(limit)
	return timer.C, timer.Stop
}
