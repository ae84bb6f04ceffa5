package benchmarks_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// respConn is a minimal Redis client speaking RESP2 by hand, enough for the
// Redis baseline (commands out, integer, status, bulk, array and error replies
// in), so that go.mod needs no Redis client.
type respConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dialRESP(addr string) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}, nil
}

// do sends one command and returns its reply: an int64, a string, nil (a
// null bulk string), a []any, or an error for an error reply. Every call is bounded
// by a deadline.
func (rc *respConn) do(args ...string) (any, error) {
	if err := rc.c.SetDeadline(time.Now().Add(benchTimeout)); err != nil {
		return nil, err
	}
	fmt.Fprintf(rc.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(rc.w, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := rc.w.Flush(); err != nil {
		return nil, err
	}
	return rc.reply()
}

// reply reads one reply; an array comes back as []any.
func (rc *respConn) reply() (any, error) {
	line, err := rc.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("resp: short reply %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New("redis: " + body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err // -1: null bulk string
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rc.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = rc.reply(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("resp: unsupported reply %q", line)
}

func (rc *respConn) Close() error { return rc.c.Close() }
