package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// grantJSON and infoJSON are the HTTP API's JSON forms, so that scripts read
// the same fields from the command as from the server.
type grantJSON struct {
	Name      string      `json:"name"`
	Holder    string      `json:"holder"`
	Owner     string      `json:"owner"`
	Token     token.Token `json:"token"`
	TTLMillis int64       `json:"ttl_ms"`
	ExpiresAt string      `json:"expires_at"`
}

type infoJSON struct {
	Name      string      `json:"name"`
	Owner     string      `json:"owner"`
	Token     token.Token `json:"token"`
	TTLMillis int64       `json:"ttl_ms"`
	ExpiresAt string      `json:"expires_at"`
}

func toGrantJSON(g lease.Grant) grantJSON {
	return grantJSON{g.Name, g.Holder, g.Owner, g.Token, g.TTL.Milliseconds(), g.Expires.UTC().Format(time.RFC3339Nano)}
}

func toInfoJSON(i lease.Info) infoJSON {
	return infoJSON{i.Name, i.Owner, i.Token, i.TTL.Milliseconds(), i.Expires.UTC().Format(time.RFC3339Nano)}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

func runAcquire(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "acquire")
	var sf storeFlags
	sf.register(fs)
	name := fs.String("name", "", "the lease `name` (required)")
	ttl := fs.Duration("ttl", 30*time.Second, "the lease's time to live")
	wait := fs.Duration("wait", 0, "how long to wait for a held name (0: fail at once)")
	owner := fs.String("owner", lease.DefaultOwner(), "a label for people: who holds the lease")
	holder := fs.String("holder", "", "the holder secret (default: a new random one); re-acquire with the same holder is idempotent")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *name == "" {
		return usagef("acquire: -name is required")
	}
	s, err := sf.open(fs)
	if err != nil {
		return err
	}
	defer s.Close()
	h := *holder
	if h == "" {
		h = lease.NewHolder()
	}
	g, err := acquireWaiting(ctx, s, lease.AcquireRequest{Name: *name, Holder: h, Owner: *owner, TTL: *ttl}, *wait)
	if err != nil {
		return fmt.Errorf("acquire %q: %w", *name, err)
	}
	return printJSON(e.stdout, toGrantJSON(g))
}

// acquireWaiting acquires, waiting up to wait in slices the store accepts.
func acquireWaiting(ctx context.Context, s lease.Store, req lease.AcquireRequest, wait time.Duration) (lease.Grant, error) {
	if wait < 0 {
		return lease.Grant{}, usagef("-wait must not be negative")
	}
	deadline := time.Now().Add(wait)
	for {
		req.Wait = min(time.Until(deadline), lease.MaxWait)
		if req.Wait < 0 {
			req.Wait = 0
		}
		g, err := s.Acquire(ctx, req)
		if err == nil || !isHeld(err) || time.Until(deadline) <= 0 {
			return g, err
		}
	}
}

func runRenew(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "renew")
	var sf storeFlags
	sf.register(fs)
	name, holder, tok := holderFlags(fs)
	ttl := fs.Duration("ttl", 0, "the new time to live (0: the lease's TTL)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	t, err := checkHolderFlags("renew", *name, *holder, *tok)
	if err != nil {
		return err
	}
	s, err := sf.open(fs)
	if err != nil {
		return err
	}
	defer s.Close()
	g, err := s.Renew(ctx, *name, *holder, t, *ttl)
	if err != nil {
		return fmt.Errorf("renew %q: %w", *name, err)
	}
	return printJSON(e.stdout, toGrantJSON(g))
}

func runRelease(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "release")
	var sf storeFlags
	sf.register(fs)
	name, holder, tok := holderFlags(fs)
	if err := parse(fs, args, false); err != nil {
		return err
	}
	t, err := checkHolderFlags("release", *name, *holder, *tok)
	if err != nil {
		return err
	}
	s, err := sf.open(fs)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Release(ctx, *name, *holder, t); err != nil {
		return fmt.Errorf("release %q: %w", *name, err)
	}
	return printJSON(e.stdout, map[string]bool{"released": true})
}

func holderFlags(fs *flag.FlagSet) (name, holder, tok *string) {
	name = fs.String("name", "", "the lease `name` (required)")
	holder = fs.String("holder", "", "the holder secret from the grant (required)")
	tok = fs.String("token", "", "the fencing token from the grant (required)")
	return name, holder, tok
}

func checkHolderFlags(cmd, name, holder, tok string) (token.Token, error) {
	if name == "" || holder == "" || tok == "" {
		return 0, usagef("%s: -name, -holder and -token are required", cmd)
	}
	t, err := token.Parse(tok)
	if err != nil {
		return 0, usagef("%s: -token: %v", cmd, err)
	}
	return t, nil
}

func runList(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "ls")
	var sf storeFlags
	sf.register(fs)
	prefix := fs.String("prefix", "", "list only names with this prefix")
	asJSON := fs.Bool("json", false, "print {\"leases\": [...]} as the HTTP API does")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	s, err := sf.open(fs)
	if err != nil {
		return err
	}
	defer s.Close()
	infos, err := s.List(ctx, *prefix)
	if err != nil {
		return fmt.Errorf("ls: %w", err)
	}
	if *asJSON {
		out := struct {
			Leases []infoJSON `json:"leases"`
		}{Leases: []infoJSON{}}
		for _, i := range infos {
			out.Leases = append(out.Leases, toInfoJSON(i))
		}
		return printJSON(e.stdout, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTOKEN\tOWNER\tTTL\tEXPIRES")
	for _, i := range infos {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%s\n", i.Name, i.Token, i.Owner, i.TTL, i.Expires.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func runGet(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "get")
	var sf storeFlags
	sf.register(fs)
	name := fs.String("name", "", "the lease `name` (required)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *name == "" {
		return usagef("get: -name is required")
	}
	s, err := sf.open(fs)
	if err != nil {
		return err
	}
	defer s.Close()
	i, err := s.Get(ctx, *name)
	if err != nil {
		return fmt.Errorf("get %q: %w", *name, err)
	}
	return printJSON(e.stdout, toInfoJSON(i))
}
