package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate, PEM
}

var serial int64

// newCA makes a CA named name and writes its certificate to dir.
func newCA(t testing.TB, dir, name string) *testCA {
	t.Helper()
	key := newKey(t)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue makes a certificate named name for 127.0.0.1 and localhost (a
// server's, or a client's when client is true) and writes it and its key to
// certFile and keyFile, each replaced by a rename as certificate tools do.
func (ca *testCA) issue(t testing.TB, name, certFile, keyFile string, client bool) {
	t.Helper()
	key := newKey(t)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if certFile != "" {
		writePEM(t, certFile, "CERTIFICATE", der)
	}
	if keyFile != "" {
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, keyFile, "PRIVATE KEY", kder)
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// writePEM writes one PEM block to path through a temporary file and a
// rename.
func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tlsServer is a "picket serve" with TLS, and the files it was given.
type tlsServer struct {
	*server
	addr              string // host:port
	ca                *testCA
	certFile, keyFile string
}

// startTLSServer starts "picket serve" with a certificate named "one" from a
// new CA, and extra flags.
func startTLSServer(t *testing.T, extra ...string) *tlsServer {
	t.Helper()
	dir := t.TempDir()
	s := &tlsServer{ca: newCA(t, dir, "server-ca"), certFile: filepath.Join(dir, "server.pem"), keyFile: filepath.Join(dir, "server.key")}
	s.ca.issue(t, "one", s.certFile, s.keyFile, false)
	s.server = startServer(t, filepath.Join(dir, "picket.db"), append([]string{"-tls-cert", s.certFile, "-tls-key", s.keyFile}, extra...)...)
	s.addr = strings.TrimPrefix(s.url, "http://")
	s.url = "https://" + s.addr
	return s
}

// servedName connects afresh (a full handshake, no resumed session) and
// returns the common name of the certificate the server presented.
func (s *tlsServer) servedName(t *testing.T) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(s.ca.cert)
	conn, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS handshake with picket serve: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestServeTLS: picket serve -tls-cert/-tls-key answers HTTPS; the client
// trusts it with -ca (or PICKET_CA), refuses it with a CA that did not sign
// it and with the system's CAs, and the loopback Host rules still hold.
func TestServeTLS(t *testing.T) {
	s := startTLSServer(t)
	wrong := newCA(t, t.TempDir(), "other-ca")

	if r := runPicket(t, "acquire", "-server", s.url, "-ca", s.ca.file, "-name", "tls/a", "-ttl", "1m"); r.code != 0 {
		t.Fatalf("acquire over HTTPS with -ca: exit %d: %s", r.code, r.stderr)
	}
	// A bare host:port with a TLS flag means https://; the CA from the
	// environment.
	cmd := picket(t, "get", "-server", s.addr, "-name", "tls/a")
	cmd.Env = append(cmd.Env, "PICKET_CA="+s.ca.file)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if r := waitPicket(t, cmd, &out, &errb, time.Minute); r.code != 0 || !strings.Contains(r.stdout, `"tls/a"`) {
		t.Fatalf("get with PICKET_CA and a bare host:port: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}

	for _, tc := range []struct{ name, ca string }{{"a CA that did not sign it", wrong.file}, {"the system's CAs", ""}} {
		args := []string{"get", "-server", s.url, "-name", "tls/a"}
		if tc.ca != "" {
			args = append(args, "-ca", tc.ca)
		}
		r := runPicket(t, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "certificate") {
			t.Errorf("get trusting %s: exit %d, stderr %q; want a refusal that names the certificate", tc.name, r.code, r.stderr)
		}
	}
	if r := runPicket(t, "ls", "-server", strings.Replace(s.url, "https", "http", 1), "-ca", s.ca.file); r.code != exitUsage {
		t.Errorf("-ca with an http:// server: exit %d (%s); want %d", r.code, r.stderr, exitUsage)
	}
	if r := runPicket(t, "ls", "-db", filepath.Join(t.TempDir(), "x.db"), "-ca", s.ca.file); r.code != exitUsage {
		t.Errorf("-ca with -db: exit %d (%s); want %d", r.code, r.stderr, exitUsage)
	}

	// The DNS-rebinding rule: on loopback, only loopback Host names.
	pool := x509.NewCertPool()
	pool.AddCert(s.ca.cert)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for host, want := range map[string]int{"127.0.0.1": 200, "localhost": 200, "locks.attacker.example": 403} {
		req, err := http.NewRequest("GET", s.url+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /healthz over HTTPS with Host %s: %d; want %d", host, resp.StatusCode, want)
		}
	}
	if r := runPicket(t, "serve", "-db", filepath.Join(t.TempDir(), "x.db"), "-tls-cert", s.certFile); r.code != exitUsage {
		t.Errorf("serve with -tls-cert alone: exit %d (%s); want %d", r.code, r.stderr, exitUsage)
	}
}

// TestServeTLSRotation: a certificate renewed on disk is served from the
// next handshake on, without a restart; a certificate whose key has not
// been written yet keeps the previous pair in service; SIGHUP reloads too.
func TestServeTLSRotation(t *testing.T) {
	s := startTLSServer(t)
	if got := s.servedName(t); got != "one" {
		t.Fatalf("served %q; want one", got)
	}
	s.ca.issue(t, "two", s.certFile, s.keyFile, false)
	if got := s.servedName(t); got != "two" {
		t.Fatalf("after renewing the files, served %q; want two (no restart)", got)
	}

	// Half a renewal: the new certificate without its key.
	s.ca.issue(t, "three", s.certFile, "", false)
	if got := s.servedName(t); got != "two" {
		t.Fatalf("with a certificate that does not match its key, served %q; want the previous pair, two", got)
	}
	waitFor(t, 10*time.Second, "the failed reload in the log", func() bool {
		return strings.Contains(s.logs.String(), "TLS certificate not reloaded")
	})
	s.ca.issue(t, "four", s.certFile, s.keyFile, false)
	if got := s.servedName(t); got != "four" {
		t.Fatalf("after the whole pair was written, served %q; want four", got)
	}

	s.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, "the SIGHUP reload in the log", func() bool {
		return strings.Contains(s.logs.String(), "why=SIGHUP")
	})
	if got := s.servedName(t); got != "four" {
		t.Fatalf("after SIGHUP, served %q; want four", got)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d after SIGHUP and SIGTERM:\n%s", code, s.logs)
	}
}

// TestServeMutualTLS: with -tls-client-ca, picket serve refuses a client
// without a certificate and one whose certificate another CA signed, and
// answers one with a certificate from the CA it was given (flags or
// environment).
func TestServeMutualTLS(t *testing.T) {
	dir := t.TempDir()
	clients := newCA(t, dir, "client-ca")
	s := startTLSServer(t, "-tls-client-ca", clients.file)
	good, goodKey := filepath.Join(dir, "good.pem"), filepath.Join(dir, "good.key")
	clients.issue(t, "script-host", good, goodKey, true)
	stranger := newCA(t, dir, "stranger-ca")
	bad, badKey := filepath.Join(dir, "bad.pem"), filepath.Join(dir, "bad.key")
	stranger.issue(t, "script-host", bad, badKey, true)

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no client certificate", nil},
		{"a certificate from another CA", []string{"-cert", bad, "-key", badKey}},
	} {
		r := runPicket(t, append([]string{"ls", "-server", s.url, "-ca", s.ca.file}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, "certificate") {
			t.Errorf("ls with %s: exit %d, stderr %q; want a refusal that names the certificate", tc.name, r.code, r.stderr)
		}
	}
	if r := runPicket(t, "acquire", "-server", s.url, "-ca", s.ca.file, "-cert", good, "-key", goodKey, "-name", "m/a", "-ttl", "1m"); r.code != 0 {
		t.Errorf("acquire with a client certificate: exit %d: %s", r.code, r.stderr)
	}
	cmd := picket(t, "get", "-server", s.url, "-name", "m/a")
	cmd.Env = append(cmd.Env, "PICKET_CA="+s.ca.file, "PICKET_CERT="+good, "PICKET_KEY="+goodKey)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if r := waitPicket(t, cmd, &out, &errb, time.Minute); r.code != 0 {
		t.Errorf("get with PICKET_CA, PICKET_CERT and PICKET_KEY: exit %d: %s", r.code, r.stderr)
	}
	if r := runPicket(t, "ls", "-server", s.url, "-ca", s.ca.file, "-cert", good); r.code != exitUsage {
		t.Errorf("-cert without -key: exit %d (%s); want %d", r.code, r.stderr, exitUsage)
	}
}

// TestBenchOverTLS: picket bench measures an https:// server with the CA of
// -ca (without it every request is refused, naming the certificate); TLS
// flags without -server are a usage error.
func TestBenchOverTLS(t *testing.T) {
	s := startTLSServer(t)
	r := runPicket(t, "bench", "-server", s.url, "-ca", s.ca.file, "-c", "2", "-d", "200ms", "-names", "distinct", "-json")
	if r.code != 0 || !strings.Contains(r.stdout, `"clients":2`) || !strings.Contains(r.stdout, `"errors":0,`) {
		t.Fatalf("bench over HTTPS with -ca: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// Without -ca the system's CAs do not know the server's: every request
	// of the step fails, and the row says why.
	if r := runPicket(t, "bench", "-server", s.url, "-c", "1", "-d", "100ms", "-names", "distinct", "-json"); strings.Contains(r.stdout, `"errors":0,`) ||
		!strings.Contains(r.stderr, "certificate signed by unknown authority") {
		t.Errorf("bench over HTTPS trusting the system's CAs: exit %d, stdout %q, stderr %q; want every request refused, naming the certificate", r.code, r.stdout, r.stderr)
	}
	if r := runPicket(t, "bench", "-ca", s.ca.file, "-c", "1", "-d", "100ms"); r.code != exitUsage {
		t.Errorf("bench -ca without -server: exit %d (%s); want %d", r.code, r.stderr, exitUsage)
	}
}
