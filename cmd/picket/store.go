package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/sqlite"
)

// DefaultDB is the SQLite file used when neither -db nor -server is given.
const DefaultDB = "picket.db"

// storeFlags are the flags that choose the store: an embedded SQLite file
// (-db), a picket server (-server) or an etcd cluster (-etcd).
type storeFlags struct {
	db        string
	server    string
	authFile  string
	adminFile string         // -admin-token-file: the admin token (revoke needs it; it opens every route)
	tls       clientTLSFlags // -ca, -cert, -key (tls_client.go)
	etcd      etcdFlags

	allowOverlay bool

	// existing: a read command's store (get, ls, watch, history, health,
	// kv get): a -db that does not exist is a usage error, and nothing is
	// created (sqlite.WithExisting). serve, acquire, run and kv put create
	// the file.
	existing bool
}

// overlayFlagUsage is the help of -allow-overlayfs.
const overlayFlagUsage = "accept a -db on overlayfs (a container's root file system), which is refused otherwise: " +
	"the same file opened through the overlay's upper directory hands out the same tokens twice, and a container " +
	"recreated without a volume starts its tokens again at 1 (for a test suite in a container)"

// overlayOption turns -allow-overlayfs into the store's option.
func overlayOption(allow bool) []sqlite.Option {
	if allow {
		return []sqlite.Option{sqlite.WithOverlayRisk()}
	}
	return nil
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", DefaultDB, "embedded mode: the SQLite `file`")
	fs.StringVar(&f.server, "server", "", "remote mode: the picket server's `URL`")
	fs.StringVar(&f.authFile, "auth-token-file", "", "remote mode: read the bearer token from `file`")
	fs.StringVar(&f.adminFile, "admin-token-file", "", "remote mode: read the server's admin token from `file`: revoke needs it, and alone it is enough for every request")
	fs.BoolVar(&f.allowOverlay, "allow-overlayfs", false, "embedded mode: "+overlayFlagUsage)
	f.tls.register(fs)
	f.etcd.register(fs)
}

// store is what the commands use: a lease store they close. What only some
// stores have (lease.KV, lease.HealthChecker, ...) they find by type
// assertion.
type store interface {
	lease.Store
	io.Closer
}

// storeKind is the kind of store the flags name.
type storeKind int

const (
	storeEmbedded storeKind = iota // -db: an SQLite file (picket.db when nothing is named)
	storeRemote                    // -server: a picket server
	storeEtcd                      // -etcd: an etcd cluster
)

// resolve says which store the flags name, after the rules below, and
// checks the flags that go with it. fs must have been parsed.
//
// The store flags come from two places, the command line and the
// environment (PICKET_DB, PICKET_SERVER, PICKET_ETCD,
// PICKET_AUTH_TOKEN_FILE). A store named on the command line wins over one
// named in the environment, whose flags are then ignored: with
// PICKET_SERVER exported, as the README suggests, "picket ls -db x.db" reads
// x.db. Two stores named in one place are a usage error that says where each
// came from.
func (f *storeFlags) resolve(fs *flag.FlagSet) (storeKind, error) {
	db, server, etcdSet := flagSource(fs, "db"), flagSource(fs, "server"), flagSource(fs, "etcd")
	if f.server == "" {
		server = ""
	}
	if !f.etcd.set() {
		etcdSet = ""
	}
	// The command line wins: drop every store the environment names.
	if db == onCommandLine || server == onCommandLine || etcdSet == onCommandLine {
		if db != onCommandLine {
			db = ""
		}
		if server != onCommandLine {
			server = ""
			f.dropServer(fs)
		}
		if etcdSet != onCommandLine {
			etcdSet, f.etcd.endpoints = "", ""
		}
	}
	var named []string
	for _, n := range []struct{ flag, from string }{{"db", db}, {"server", server}, {"etcd", etcdSet}} {
		if n.from != "" {
			named = append(named, describeFlag(n.flag, n.from))
		}
	}
	if len(named) > 1 {
		return 0, usagef("%s exclude each other: name one store", strings.Join(named, " and "))
	}
	if f.adminFile != "" && f.server == "" {
		return 0, usagef("%s needs -server (an embedded store or etcd needs no token)", describeFlag("admin-token-file", flagSource(fs, "admin-token-file")))
	}
	if f.server != "" {
		return storeRemote, nil
	}
	if f.authFile != "" {
		return 0, usagef("%s needs -server", describeFlag("auth-token-file", flagSource(fs, "auth-token-file")))
	}
	if f.tls.set() {
		return 0, usagef("-ca, -cert and -key need -server")
	}
	if f.etcd.set() {
		return storeEtcd, nil
	}
	return storeEmbedded, nil
}

// dropServer forgets -server and the client flags that go with it
// (-auth-token-file, -admin-token-file, -ca, -cert, -key), except those given on the command
// line: they came from the environment along with a server that is not
// used.
func (f *storeFlags) dropServer(fs *flag.FlagSet) {
	f.server = ""
	for _, t := range []struct {
		flag string
		v    *string
	}{{"auth-token-file", &f.authFile}, {"admin-token-file", &f.adminFile}, {"ca", &f.tls.ca}, {"cert", &f.tls.cert}, {"key", &f.tls.key}} {
		if flagSource(fs, t.flag) != onCommandLine {
			*t.v = ""
		}
	}
}

// local resolves the flags of a command that runs on a store of its own
// (serve, backup): a -server, and the client flags that go with it, from
// the environment are ignored (they are there for the clients), and on the
// command line they are a usage error that says what cmd needs instead.
func (f *storeFlags) local(fs *flag.FlagSet, cmd, instead string) (storeKind, error) {
	if flagSource(fs, "server") == onCommandLine {
		return 0, usagef("%s: -server names a picket server to use; %s", cmd, instead)
	}
	f.dropServer(fs) // what is left came from the command line
	for _, c := range []struct{ flag, v string }{{"auth-token-file", f.authFile}, {"admin-token-file", f.adminFile}, {"ca", f.tls.ca}, {"cert", f.tls.cert}, {"key", f.tls.key}} {
		if c.v != "" {
			return 0, usagef("%s: -%s goes with -server; %s", cmd, c.flag, instead)
		}
	}
	return f.resolve(fs)
}

// open opens the store the flags name. fs must have been parsed.
func (f *storeFlags) open(fs *flag.FlagSet) (store, error) {
	kind, err := f.resolve(fs)
	if err != nil {
		return nil, err
	}
	switch kind {
	case storeEtcd:
		return f.etcd.open()
	case storeRemote:
		return f.openRemote(fs)
	}
	opts := overlayOption(f.allowOverlay)
	if f.existing {
		opts = append(opts, sqlite.WithExisting())
	}
	s, err := sqlite.Open(f.db, opts...)
	if f.existing && errors.Is(err, iofs.ErrNotExist) {
		def := ""
		if flagSource(fs, "db") == "" {
			def = " (the default -db: name the store with -db, -server or -etcd)"
		}
		return nil, usagef("%s: %v%s; %s reads a store and creates none (serve, acquire, run and kv put create one)",
			fs.Name(), err, def, fs.Name())
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openRemote returns the client of the -server the flags name.
func (f *storeFlags) openRemote(fs *flag.FlagSet) (store, error) {
	var opts []httpapi.Option
	if f.authFile != "" {
		tok, err := readAuthToken(f.authFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, httpapi.WithAuthToken(tok))
	}
	if f.adminFile != "" {
		tok, err := readAuthToken(f.adminFile)
		if err != nil {
			return nil, fmt.Errorf("admin token: %w", err)
		}
		opts = append(opts, httpapi.WithAdminToken(tok))
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
		return nil, usagef("%s: %v", describeFlag("server", flagSource(fs, "server")), err)
	}
	return remote{c}, nil
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
const envPrefix = "PICKET_"

// envVar is the environment variable that stands in for a flag.
func envVar(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// fromEnv marks a flag whose value came from its environment variable: parse
// wraps the flag's Value in it, so flagSource can tell the two places apart.
type fromEnv struct {
	flag.Value
	name string // the variable
}

// onCommandLine is what flagSource answers for a flag given on the command
// line; for a flag from the environment it answers the variable's name.
const onCommandLine = "command line"

// flagSource says where the flag called name got its value: onCommandLine,
// the environment variable's name, or "" when the flag was not set.
func flagSource(fs *flag.FlagSet, name string) string {
	from := ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name != name {
			return
		}
		from = onCommandLine
		if e, ok := f.Value.(fromEnv); ok {
			from = e.name
		}
	})
	return from
}

// describeFlag names a flag with where it was set, for an error message:
// "-db (command line)" or "-server (PICKET_SERVER in the environment)".
func describeFlag(name, from string) string {
	if from == onCommandLine || from == "" {
		return "-" + name + " (command line)"
	}
	return "-" + name + " (" + from + " in the environment)"
}

// parse parses args into fs, mapping flag errors to usage errors. A flag not
// on the command line is taken from its environment variable (PICKET_ and
// the flag's name in capitals, dashes as underscores), if set and not empty:
// the command line wins. Positional arguments are refused unless allowArgs.
func parse(fs *flag.FlagSet, args []string, allowArgs bool) error {
	out := fs.Output()
	var printed bytes.Buffer
	fs.SetOutput(&printed)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) { // -h: the flag list, as asked
			out.Write(printed.Bytes())
			return &exitStatus{code: exitOK}
		}
		// What the flag package printed (the error, then every flag) is
		// dropped: one line says what was wrong (exitCode adds where to
		// read the flags), so the error does not scroll away.
		if hint := durationHint(fs, err.Error()); hint != "" {
			return &usageError{cmd: fs.Name(), msg: fmt.Sprintf("%s: %v; %s", fs.Name(), err, hint)}
		}
		return &usageError{cmd: fs.Name(), msg: fmt.Sprintf("%s: %v", fs.Name(), err)}
	}
	onLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onLine[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		v := os.Getenv(envVar(f.Name))
		if err != nil || onLine[f.Name] || v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = usagef("%s: %s=%q: invalid value for -%s: %v", fs.Name(), envVar(f.Name), v, f.Name, e)
			if hint := durationHint(fs, fmt.Sprintf("invalid value %q for flag -%s: ", v, f.Name)); hint != "" {
				err = usagef("%v; %s", err, hint)
			}
			return
		}
		f.Value = fromEnv{f.Value, envVar(f.Name)}
	})
	if err != nil {
		return err
	}
	if !allowArgs && fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// badValue matches the flag package's error for a value a flag refused.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): `)

// durationHint says what a number given to a duration flag lacks, from the
// flag package's error: -ttl 10 is refused, and 10s is what was meant.
func durationHint(fs *flag.FlagSet, msg string) string {
	m := badValue.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	if _, isDuration := g.Get().(time.Duration); !isDuration {
		return ""
	}
	if _, err := strconv.ParseFloat(m[1], 64); err != nil {
		return ""
	}
	return fmt.Sprintf("-%s takes a duration with a unit: %ss for seconds (or %sms, %sm, %sh)", m[2], m[1], m[1], m[1], m[1])
}

func newFlagSet(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}
