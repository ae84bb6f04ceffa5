package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// The script commands print what the HTTP API answers (httpapi.Encode*), so
// a script reads the same JSON from "picket acquire" as from the server.

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
	switch {
	case *name == "":
		return usagef("acquire: -name is required")
	case *wait < 0:
		return usagef("acquire: -wait must not be negative")
	}
	opts := []lease.ManagerOption{lease.WithOwner(*owner)}
	if *holder != "" {
		opts = append(opts, lease.WithHolder(*holder))
	}
	return sf.with(fs, func(s store) error {
		l, err := takeLease(ctx, lease.NewManager(s, opts...), *name, *ttl, *wait, e.stderr, "acquire")
		if err != nil {
			return err
		}
		return httpapi.EncodeGrant(e.stdout, l.Grant())
	})
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
	return sf.with(fs, func(s store) error {
		g, err := s.Renew(ctx, *name, *holder, t, *ttl)
		if err != nil {
			return err // the store names the call and the lease
		}
		return httpapi.EncodeGrant(e.stdout, g)
	})
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
	return sf.with(fs, func(s store) error {
		if err := s.Release(ctx, *name, *holder, t); err != nil {
			return err // the store names the call and the lease
		}
		_, err := fmt.Fprintln(e.stdout, `{"released":true}`)
		return err
	})
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
	asJSON := fs.Bool("json", false, `print {"leases": [...]} as the HTTP API does`)
	if err := parse(fs, args, false); err != nil {
		return err
	}
	return sf.with(fs, func(s store) error {
		infos, err := lease.ListAll(ctx, s, *prefix)
		if err != nil {
			return fmt.Errorf("ls: %w", err)
		}
		if *asJSON {
			return httpapi.EncodeList(e.stdout, infos)
		}
		now := time.Now()
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tTOKEN\tOWNER\tTTL\tLEFT\tEXPIRES")
		for _, i := range infos {
			left := max(i.Expires.Sub(now), 0).Round(time.Millisecond)
			fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%v\t%s\n", i.Name, i.Token, i.Owner, i.TTL, left, i.Expires.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	})
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
	return sf.with(fs, func(s store) error {
		i, err := s.Get(ctx, *name)
		if err != nil {
			return err // the store names the call and the lease
		}
		return httpapi.EncodeInfo(e.stdout, i)
	})
}
