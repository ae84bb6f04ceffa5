package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The sign-in's guard against guessing. POST /ui/login compares a token,
// so a client that can reach it could try tokens as fast as the server
// answers: each client address may send uiLoginTries wrong tokens per
// uiLoginWindow, and past them every sign-in from that address, the right
// token's included (or the limit would tell a guess that hit), is answered
// 429 until its window ends. The table of addresses is bounded
// (uiLoginAddrs): when it is full of addresses still in their window, a new
// address shares the one overflow entry, so a flood of addresses cannot
// grow the server's memory, only slow sign-in for those addresses.

const (
	uiLoginTries  = 10
	uiLoginWindow = time.Minute
	uiLoginAddrs  = 4096
)

// loginLimit counts each address's wrong tokens in its current window.
type loginLimit struct {
	mu    sync.Mutex
	addrs map[string]*loginTries
}

type loginTries struct {
	since time.Time // the window's start
	wrong int
}

// overflowAddr is the entry of the addresses that found the table full.
const overflowAddr = "(others)"

// clientAddr is r's client address without the port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// entry returns addr's entry, current at now; l.mu is held.
func (l *loginLimit) entry(addr string, now time.Time) *loginTries {
	if l.addrs == nil {
		l.addrs = map[string]*loginTries{}
	}
	e := l.addrs[addr]
	if e == nil {
		if len(l.addrs) >= uiLoginAddrs {
			for a, old := range l.addrs {
				if now.Sub(old.since) >= uiLoginWindow {
					delete(l.addrs, a)
				}
			}
		}
		if len(l.addrs) >= uiLoginAddrs {
			addr = overflowAddr
			if e = l.addrs[addr]; e != nil {
				return l.fresh(e, now)
			}
		}
		e = &loginTries{since: now}
		l.addrs[addr] = e
	}
	return l.fresh(e, now)
}

func (l *loginLimit) fresh(e *loginTries, now time.Time) *loginTries {
	if now.Sub(e.since) >= uiLoginWindow {
		e.since, e.wrong = now, 0
	}
	return e
}

// allowed reports whether addr may try a token now.
func (l *loginLimit) allowed(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.entry(addr, now).wrong < uiLoginTries
}

// failed counts a wrong token from addr.
func (l *loginLimit) failed(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entry(addr, now).wrong++
}
