// Control tls-no-reload (a mutant, swapped in by .ci/safety with go test -overlay):
// the certificate is loaded at start and on SIGHUP only, never when its files
// change. TestServeTLSRotation must fail.

package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// serveTLSFlags are picket serve's TLS flags: the certificate and key it
// serves (reloaded without a restart) and, for mutual TLS, the CAs whose
// client certificates it accepts.
type serveTLSFlags struct {
	cert, key, clientCA string
}

func (f *serveTLSFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cert, "tls-cert", "", "serve HTTPS with the certificate chain in this PEM `file` (reloaded when it changes, or on SIGHUP)")
	fs.StringVar(&f.key, "tls-key", "", "the private key of -tls-cert (PEM `file`)")
	fs.StringVar(&f.clientCA, "tls-client-ca", "", "mutual TLS: accept only clients with a certificate from the CAs in this PEM `file`")
}

// mode says how the server is reached: "off", "on" or "mutual".
func (f *serveTLSFlags) mode() string {
	switch {
	case f.cert == "":
		return "off"
	case f.clientCA != "":
		return "mutual"
	}
	return "on"
}

// config returns the server's TLS configuration, or nil without -tls-cert.
// The certificate is loaded once here (an error comes back at once) and then
// again whenever its files change.
func (f *serveTLSFlags) config(logger log.Logger) (*tls.Config, *certReloader, error) {
	if f.cert == "" && f.key == "" {
		if f.clientCA != "" {
			return nil, nil, usagef("serve: -tls-client-ca needs -tls-cert and -tls-key")
		}
		return nil, nil, nil
	}
	if f.cert == "" || f.key == "" {
		return nil, nil, usagef("serve: -tls-cert and -tls-key go together")
	}
	r := &certReloader{certFile: f.cert, keyFile: f.key, logger: logger}
	if err := r.load(); err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.getCertificate}
	if f.clientCA != "" {
		pool, err := loadCAs(f.clientCA)
		if err != nil {
			return nil, nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, r, nil
}

// certReloader serves a certificate and key from files and picks up new
// ones without a restart: at each handshake it compares the files with
// those it loaded (file identity, size, modification time), and reload
// loads them on demand (SIGHUP). A pair that does not load — a certificate
// renewed before its key is written, say — keeps the last good one in
// service and is tried again when the files change again.
type certReloader struct {
	certFile, keyFile string
	logger            log.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	loaded [2]os.FileInfo // of certFile and keyFile when cert was loaded, or last failed to
}

// getCertificate is tls.Config.GetCertificate.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cert, nil // the pair loaded at start, until SIGHUP
}

// reload loads the files again, whether or not they changed (SIGHUP).
func (r *certReloader) reload(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloadLocked(why)
}

func (r *certReloader) reloadLocked(why string) {
	if err := r.loadLocked(); err != nil {
		level.Error(r.logger).Log("msg", "TLS certificate not reloaded; serving the previous one", "why", why, "err", err)
		return
	}
	level.Info(r.logger).Log("msg", "TLS certificate reloaded", "why", why, "subject", r.cert.Leaf.Subject.String(),
		"not_after", r.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
}

// load loads the pair the first time; an error is returned, not logged.
func (r *certReloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadLocked()
}

func (r *certReloader) loadLocked() error {
	r.loaded = [2]os.FileInfo{stat(r.certFile), stat(r.keyFile)}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert = &cert // Leaf is set by LoadX509KeyPair
	return nil
}

// changed reports whether either file is not the one last loaded.
func (r *certReloader) changed() bool {
	for i, name := range []string{r.certFile, r.keyFile} {
		now, then := stat(name), r.loaded[i]
		switch {
		case now == nil || then == nil:
			if now != then {
				return true
			}
		case !os.SameFile(now, then) || now.Size() != then.Size() || !now.ModTime().Equal(then.ModTime()):
			return true
		}
	}
	return false
}

// stat returns the file's info, or nil when it cannot be read.
func stat(name string) os.FileInfo {
	fi, err := os.Stat(name)
	if err != nil {
		return nil
	}
	return fi
}

// loadCAs reads a pool of CA certificates from a PEM file.
func loadCAs(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA certificates: no PEM certificate in %s", path)
	}
	return pool, nil
}
