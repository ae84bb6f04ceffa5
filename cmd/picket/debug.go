package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// checkDebugAddr checks the address of "serve -debug-addr". Profiles and
// goroutine dumps show the server's insides (and a CPU profile costs the
// server while it runs), so it must be a loopback address: reach it from
// elsewhere through an SSH tunnel.
func checkDebugAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("serve: -debug-addr %q: %v", addr, err)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return usagef("serve: -debug-addr %q: give a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT); profiles show the server's insides", addr)
		}
	}
	return nil
}

// listenDebug listens on addr (checked by checkDebugAddr) for the
// profiling endpoints.
func listenDebug(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: -debug-addr: %w", err)
	}
	return ln, nil
}

// debugServer serves net/http/pprof under /debug/pprof/, and nothing else.
func debugServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}

// serveDebug serves the debug listener until it is closed.
func serveDebug(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: debug listener: %w", err)
	}
	return nil
}
