package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/peterbourgon/ff/v3"
	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// DefaultDB is the SQLite file used when neither -db nor -server is given.
const DefaultDB = "picket.db"

// storeFlags are the flags that choose the store: an embedded SQLite file
// (-db), a picket server (-server) or an etcd cluster (-etcd).
type storeFlags struct {
	db       string
	server   string
	authFile string
	tls      clientTLSFlags // -ca, -cert, -key (tls_client.go)
	etcd     etcdFlags
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", DefaultDB, "embedded mode: the SQLite `file`")
	fs.StringVar(&f.server, "server", "", "remote mode: the picket server's `URL`")
	fs.StringVar(&f.authFile, "auth-token-file", "", "remote mode: read the bearer token from `file`")
	f.tls.register(fs)
	f.etcd.register(fs)
}

// store is what the commands use: the lease store plus what only some
// backends have.
type store interface {
	lease.Store
	Close() error
}

// open opens the store the flags name. fs must have been parsed.
func (f *storeFlags) open(fs *flag.FlagSet) (store, error) {
	if f.tls.set() && f.server == "" { // TLS for etcd is -etcd-ca, -etcd-cert, -etcd-key
		return nil, usagef("-ca, -cert and -key need -server")
	}
	dbSet := false
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "db" {
			dbSet = true
		}
	})
	if f.etcd.set() {
		if dbSet || f.server != "" {
			return nil, usagef("-etcd excludes -db and -server")
		}
		if f.authFile != "" {
			return nil, usagef("-auth-token-file needs -server")
		}
		return f.etcd.open()
	}
	if f.server != "" {
		if dbSet {
			return nil, usagef("-db and -server exclude each other")
		}
		var opts []httpapi.ClientOption
		if f.authFile != "" {
			tok, err := readAuthToken(f.authFile)
			if err != nil {
				return nil, err
			}
			opts = append(opts, httpapi.WithAuthToken(tok))
		}
		url := f.tls.serverURL(f.server)
		hc, err := f.tls.httpClient(url)
		if err != nil {
			return nil, err
		}
		if hc != nil {
			opts = append(opts, httpapi.WithHTTPClient(hc))
		}
		c, err := httpapi.NewClient(url, opts...)
		if err != nil {
			return nil, usagef("-server: %v", err)
		}
		return remote{c}, nil
	}
	if f.authFile != "" {
		return nil, usagef("-auth-token-file needs -server")
	}
	s, err := sqlite.Open(f.db)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// with opens the store, runs f on it and closes it.
func (f *storeFlags) with(fs *flag.FlagSet, do func(store) error) error {
	s, err := f.open(fs)
	if err != nil {
		return err
	}
	defer s.Close()
	return do(s)
}

// serverURL turns a bare host:port, as people type it, into the server's
// URL: "localhost:7070" means "http://localhost:7070".
func serverURL(s string) string {
	if strings.Contains(s, "://") {
		return s
	}
	return "http://" + s
}

// remote adapts the HTTP client, which holds nothing to close.
type remote struct{ *httpapi.Client }

func (remote) Close() error { return nil }

// readAuthToken reads a bearer token from a file, trimming the whitespace
// around it.
func readAuthToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("auth token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("auth token file %s is empty", path)
	}
	return tok, nil
}

// envPrefix names the environment variables that stand in for flags:
// -auth-token-file can come from PICKET_AUTH_TOKEN_FILE, -db from PICKET_DB.
const envPrefix = "PICKET"

// parse parses args into fs, mapping flag errors to usage errors. A flag not
// on the command line is taken from its environment variable (PICKET_ and
// the flag's name in capitals, dashes as underscores), if set: the command
// line wins. Positional arguments are refused unless allowArgs.
func parse(fs *flag.FlagSet, args []string, allowArgs bool) error {
	// The flag package calls Usage after printing a command-line error; an
	// error in an environment variable comes back unprinted.
	printed, usage := false, fs.Usage
	fs.Usage = func() {
		printed = true
		if usage != nil {
			usage()
			return
		}
		fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
	}
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix(envPrefix)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &exitStatus{code: exitOK}
		}
		if printed {
			return &exitStatus{code: exitUsage}
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if !allowArgs && fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

func newFlagSet(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}
