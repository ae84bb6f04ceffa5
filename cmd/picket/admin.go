package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/picketlock/picket/internal/wire"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/token"
)

// runRevoke is "picket revoke NAME [-reason R] [-by WHO] [-token T]": the
// operator ends a lease its holder cannot release. Over -server it needs
// the server's admin token (-admin-token-file), which is not the clients'.
func runRevoke(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "revoke")
	var sf storeFlags
	sf.register(fs)
	reason := fs.String("reason", "", "why, for the holder and the history (at most 256 bytes)")
	by := fs.String("by", defaultBy(), "who asks, for the history")
	tokS := fs.String("token", "", "revoke only the lease with this `token` (default: whatever lease is live)")
	nameF := nameFlag(fs)
	name, _, err := leaseName(fs, args, nameF, false, false)
	if err != nil {
		return err
	}
	req := lease.RevokeRequest{Name: name, Reason: *reason, By: *by}
	if *tokS != "" {
		t, err := token.Parse(*tokS)
		if err != nil {
			return usagef("revoke: -token %q: %v", *tokS, err)
		}
		req.Token = t
	}
	if err := req.Validate(); err != nil {
		return usagef("revoke: %v", err)
	}
	return sf.with(fs, func(s store) error {
		rv, ok := s.(lease.Revoker)
		if !ok {
			return fmt.Errorf("revoke: this store cannot revoke")
		}
		info, err := rv.Revoke(ctx, req)
		if err != nil {
			return err
		}
		return wire.EncodeInfo(e.stdout, info)
	})
}

// defaultBy names the operator for the history: user@host.
func defaultBy() string {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return who + "@" + host
}

// runHistory is "picket history [-name N] [-since T] [-limit N] [-json]":
// the store's grant history, oldest first, following the pages.
func runHistory(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "history")
	sf := storeFlags{existing: true}
	sf.register(fs)
	setUsage(fs, "[NAME] [flags]")
	nameF := fs.String("name", "", "only the events of this lease `name` (or fenced key): a synonym of the NAME argument")
	since := fs.String("since", "", "only events at or after this `time`: RFC 3339 (2026-01-02T03:12:00Z) or a duration ago (1h)")
	limit := fs.Int("limit", 0, "at most this many events, the newest (0: every event kept)")
	asJSON := fs.Bool("json", false, "print one JSON object per event instead of a table")
	name, _, err := leaseName(fs, args, nameF, false, true)
	if err != nil {
		return err
	}
	req := lease.HistoryRequest{Name: name}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usagef("history: -since %q: %v", *since, err)
		}
		req.Since = t
	}
	if *limit < 0 {
		return usagef("history: -limit %d is negative", *limit)
	}
	if err := req.Validate(); err != nil {
		return usagef("history: %v", err)
	}
	return sf.with(fs, func(s store) error {
		hr, ok := s.(lease.HistoryReader)
		if !ok {
			return fmt.Errorf("history: this store keeps no history")
		}
		events, err := readHistory(ctx, hr, req, *limit)
		if err != nil {
			return err
		}
		return printEvents(e, events, *asJSON)
	})
}

// maxHistoryPages bounds the pages one "picket history" reads.
const maxHistoryPages = 10000

// readHistory follows the pages of req, oldest first; with limit, it reads
// newest first and keeps the newest limit events, then puts them in order.
func readHistory(ctx context.Context, hr lease.HistoryReader, req lease.HistoryRequest, limit int) ([]lease.Event, error) {
	req.Limit = lease.MaxHistoryLimit
	if limit > 0 {
		req.Newest, req.Limit = true, min(limit, lease.MaxHistoryLimit)
	}
	var all []lease.Event
	for range maxHistoryPages {
		page, err := hr.History(ctx, req)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Events...)
		if limit > 0 && len(all) >= limit {
			all = all[:limit]
			break
		}
		if page.Next == 0 {
			break
		}
		req.After = page.Next
	}
	if req.Newest {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	return all, nil
}

// parseSince reads -since: an RFC 3339 time, or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a negative duration")
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("neither an RFC 3339 time nor a duration")
	}
	return t, nil
}

func printEvents(e *env, events []lease.Event, asJSON bool) error {
	if asJSON {
		for _, ev := range events {
			if err := wire.EncodeEvent(e.stdout, ev); err != nil { // as GET /v1/history answers
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tEVENT\tNAME\tTOKEN\tOWNER\tREASON")
	for _, ev := range events {
		reason := ev.Reason
		if ev.By != "" {
			reason = fmt.Sprintf("%s (by %s)", reason, ev.By)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"), ev.Kind, ev.Name,
			ev.Token, ev.Owner, reason)
	}
	return tw.Flush()
}
