// Control tls-client-skip-verify (a mutant, swapped in by .ci/safety with go test -overlay):
// the client does not verify the server's certificate (any CA will do).
// TestServeTLS must fail.

package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"strings"
)

// clientTLSFlags are the client's TLS flags for -server: the CAs to trust
// instead of the system's, and a client certificate for servers that ask
// for one (picket serve -tls-client-ca).
type clientTLSFlags struct {
	ca, cert, key string
}

func (f *clientTLSFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.ca, "ca", "", "remote mode: trust the server's certificate only if a CA in this PEM `file` signed it (default: the system's CAs)")
	fs.StringVar(&f.cert, "cert", "", "remote mode: present this client certificate (PEM `file`) to a server that asks for one")
	fs.StringVar(&f.key, "key", "", "remote mode: the private key of -cert (PEM `file`)")
}

// set reports whether any of the flags was given.
func (f *clientTLSFlags) set() bool { return f.ca != "" || f.cert != "" || f.key != "" }

// serverURL turns a bare host:port, as people type it, into the server's
// URL: "localhost:7070" means "http://localhost:7070", or https:// when a
// TLS flag was given.
func (f *clientTLSFlags) serverURL(s string) string {
	if !strings.Contains(s, "://") && f.set() {
		return "https://" + s
	}
	return serverURL(s)
}

// httpClient returns the http.Client for url, or nil for the default one.
// Errors: a usage error for TLS flags with an http:// URL or a -cert without
// -key; an error for files that do not load.
func (f *clientTLSFlags) httpClient(url string) (*http.Client, error) {
	if !f.set() {
		return nil, nil
	}
	if !strings.HasPrefix(url, "https://") {
		return nil, usagef("-ca, -cert and -key need an https:// server, not %s", url)
	}
	if (f.cert == "") != (f.key == "") {
		return nil, usagef("-cert and -key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	if f.ca != "" {
		pool, err := loadCAs(f.ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if f.cert != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s and key %s: %w", f.cert, f.key, err)
		}
		// Always presented, even to a server that names other CAs: its
		// refusal then says what is wrong with the certificate.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr}, nil
}
