package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// DefaultDB is the SQLite file used when neither -db nor -server is given.
const DefaultDB = "picket.db"

// storeFlags are the flags that choose the store: an embedded SQLite file
// (-db) or a picket server (-server).
type storeFlags struct {
	db       string
	server   string
	authFile string
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", DefaultDB, "embedded mode: the SQLite `file`")
	fs.StringVar(&f.server, "server", "", "remote mode: the picket server's `URL`")
	fs.StringVar(&f.authFile, "auth-token-file", "", "remote mode: read the bearer token from `file`")
}

// store is what the commands use: the lease store plus what only some
// backends have.
type store interface {
	lease.Store
	Close() error
}

// open opens the store the flags name. fs must have been parsed.
func (f *storeFlags) open(fs *flag.FlagSet) (store, error) {
	dbSet := false
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "db" {
			dbSet = true
		}
	})
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
		c, err := httpapi.NewClient(f.server, opts...)
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

// parse parses args into fs, mapping flag errors to usage errors. Positional
// arguments are refused unless allowArgs.
func parse(fs *flag.FlagSet, args []string, allowArgs bool) error {
	if err := fs.Parse(args); err != nil {
		// The flag package has printed the error (or -h's usage) already.
		if errors.Is(err, flag.ErrHelp) {
			return &exitStatus{code: exitOK}
		}
		return &exitStatus{code: exitUsage}
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
