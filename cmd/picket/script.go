package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The script commands print what the HTTP API answers (internal/wire's Encode*), so
// a script reads the same JSON from "picket acquire" as from the server.

func runAcquire(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "acquire")
	var sf storeFlags
	sf.register(fs)
	nameF := nameFlag(fs)
	ttl := fs.Duration("ttl", 30*time.Second, "the lease's time to live")
	wait := fs.Duration("wait", 0, "how long to wait for a held name (0: fail at once)")
	owner := fs.String("owner", lease.DefaultOwner(), "a label for people: who holds the lease")
	holder := fs.String("holder", "", "the holder secret (default: a new random one); re-acquire with the same holder is idempotent")
	printF := fs.String("print", "", "print only these `fields` of the grant, comma-separated, space-separated on one line (name, holder, owner, token, ttl_ms, expires_at)")
	hold := fs.Bool("hold", false, "hold the lease, renewing it, until SIGINT or SIGTERM, then release it (as etcdctl lock does); exit 4 if it is lost")
	name, _, err := leaseName(fs, args, nameF, false, false)
	if err != nil {
		return err
	}
	if *wait < 0 {
		return usagef("acquire: -wait must not be negative")
	}
	fields, err := printFields("acquire", *printF, grantFields)
	if err != nil {
		return err
	}
	var opts []lease.AcquireOption
	if *holder != "" {
		opts = append(opts, lease.WithHolder(*holder)) // resume a lease taken with that secret
	}
	if *hold {
		// Signals are ours from the start: before the grant they end the
		// wait, after it they end the hold.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
	}
	return sf.with(fs, func(s store) error {
		m, err := lease.NewManager(s, lease.WithOwner(*owner))
		if err != nil {
			return err
		}
		l, err := takeLease(ctx, m, name, *ttl, *wait, e.stderr, "acquire", opts...)
		if err != nil {
			return err
		}
		if err := printOut(e.stdout, fields, func(w io.Writer) error { return wire.EncodeGrant(w, l.Grant()) }); err != nil {
			l.Release(context.Background())
			return err
		}
		if !*hold {
			return nil
		}
		return holdLease(ctx, l)
	})
}

// holdLease keeps l renewed until ctx ends (a signal), then releases it;
// it returns an error matching lease.ErrLost (exit 4) if the lease is lost
// first.
func holdLease(ctx context.Context, l *lease.Lease) error {
	l.KeepAlive()
	select {
	case <-ctx.Done():
		rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		if err := l.Release(rctx); err != nil {
			return fmt.Errorf("acquire -hold: %w", err)
		}
		return nil
	case <-l.Context().Done():
		return fmt.Errorf("acquire -hold: %w", l.Err())
	}
}

func runRenew(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "renew")
	var sf storeFlags
	sf.register(fs)
	nameF, holder, tok := holderFlags(fs)
	ttl := fs.Duration("ttl", 0, "the new time to live (0: the lease's TTL)")
	printF := fs.String("print", "", "print only these `fields` of the grant, comma-separated (name, holder, owner, token, ttl_ms, expires_at)")
	name, _, err := leaseName(fs, args, nameF, false, false)
	if err != nil {
		return err
	}
	t, err := checkHolderFlags("renew", *holder, *tok)
	if err != nil {
		return err
	}
	fields, err := printFields("renew", *printF, grantFields)
	if err != nil {
		return err
	}
	return sf.with(fs, func(s store) error {
		g, err := s.Renew(ctx, lease.RenewRequest{Name: name, Holder: *holder, Token: t, TTL: *ttl})
		if err != nil {
			return err // the store names the call and the lease
		}
		return printOut(e.stdout, fields, func(w io.Writer) error { return wire.EncodeGrant(w, g) })
	})
}

func runRelease(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "release")
	var sf storeFlags
	sf.register(fs)
	nameF, holder, tok := holderFlags(fs)
	name, _, err := leaseName(fs, args, nameF, false, false)
	if err != nil {
		return err
	}
	t, err := checkHolderFlags("release", *holder, *tok)
	if err != nil {
		return err
	}
	return sf.with(fs, func(s store) error {
		if err := s.Release(ctx, lease.ReleaseRequest{Name: name, Holder: *holder, Token: t}); err != nil {
			return err // the store names the call and the lease
		}
		_, err := fmt.Fprintln(e.stdout, `{"released":true}`)
		return err
	})
}

func holderFlags(fs *flag.FlagSet) (name, holder, tok *string) {
	name = nameFlag(fs)
	holder = fs.String("holder", "", "the holder secret from the grant (required)")
	tok = fs.String("token", "", "the fencing token from the grant (required)")
	return name, holder, tok
}

func checkHolderFlags(cmd, holder, tok string) (token.Token, error) {
	if holder == "" || tok == "" {
		return 0, usagef("%s: -holder and -token are required: picket %s NAME -holder H -token T", cmd, cmd)
	}
	t, err := token.Parse(tok)
	if err != nil {
		return 0, usagef("%s: -token: %v", cmd, err)
	}
	return t, nil
}

func runList(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "ls")
	sf := storeFlags{existing: true}
	sf.register(fs)
	prefix := fs.String("prefix", "", "list only names with this prefix")
	asJSON := fs.Bool("json", false, `print {"leases": [...]} as the HTTP API does`)
	if err := parse(fs, args, false); err != nil {
		return err
	}
	return sf.with(fs, func(s store) error {
		// One page at a time (lease.ListEach): a million leases never sit in
		// memory, and the first rows print before the last page is read.
		var err error
		if *asJSON {
			enc := wire.NewListEncoder(e.stdout)
			if err = lease.ListEach(ctx, s, *prefix, enc.Encode); err == nil {
				err = enc.Close()
			}
		} else {
			err = printTable(ctx, e.stdout, s, *prefix)
		}
		if err != nil {
			return fmt.Errorf("ls: %w", err)
		}
		return nil
	})
}

// printTable prints the leases as a table, a page at a time; the columns
// line up within a page.
func printTable(ctx context.Context, w io.Writer, s store, prefix string) error {
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTOKEN\tOWNER\tTTL\tLEFT\tEXPIRES")
	return lease.ListEach(ctx, s, prefix, func(page []lease.Info) error {
		for _, i := range page {
			left := max(i.Expires.Sub(now), 0).Round(time.Millisecond)
			fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%v\t%s\n", i.Name, i.Token, i.Owner, i.TTL, left, i.Expires.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	})
}

func runGet(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "get")
	sf := storeFlags{existing: true}
	sf.register(fs)
	nameF := nameFlag(fs)
	printF := fs.String("print", "", "print only these `fields` of the lease, comma-separated (name, owner, token, ttl_ms, expires_at)")
	name, _, err := leaseName(fs, args, nameF, false, false)
	if err != nil {
		return err
	}
	fields, err := printFields("get", *printF, infoFields)
	if err != nil {
		return err
	}
	return sf.with(fs, func(s store) error {
		i, err := s.Get(ctx, name)
		if err != nil {
			return err // the store names the call and the lease
		}
		return printOut(e.stdout, fields, func(w io.Writer) error { return wire.EncodeInfo(w, i) })
	})
}

// The fields -print can name: the members of the HTTP API's grant and info
// objects.
var (
	grantFields = []string{"name", "holder", "owner", "token", "ttl_ms", "expires_at"}
	infoFields  = []string{"name", "owner", "token", "ttl_ms", "expires_at"}
)

// printFields reads -print: fields of valid, comma-separated; nil for none.
func printFields(cmd, s string, valid []string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var fields []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(valid, f) {
			return nil, usagef("%s: -print %q: %q is not a field (want %s, comma-separated)", cmd, s, f, strings.Join(valid, ", "))
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// printOut writes what encode writes (one JSON object, as the HTTP API
// answers), or, with fields, only their values, space-separated on one line,
// for a shell's read: picket acquire -print holder,token | read holder tok.
func printOut(w io.Writer, fields []string, encode func(io.Writer) error) error {
	if fields == nil {
		return encode(w)
	}
	var b bytes.Buffer
	if err := encode(&b); err != nil {
		return err
	}
	d := json.NewDecoder(&b)
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return err
	}
	vals := make([]string, len(fields))
	for i, f := range fields {
		vals[i] = fmt.Sprint(obj[f])
	}
	_, err := fmt.Fprintln(w, strings.Join(vals, " "))
	return err
}
