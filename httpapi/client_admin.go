package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/picketlock/picket/lease"
)

var (
	_ lease.Revoker       = (*Client)(nil)
	_ lease.HistoryReader = (*Client)(nil)
)

// revokeBody is POST /v1/revoke's body.
type revokeBody struct {
	Name   string `json:"name"`
	Token  uint64 `json:"token,omitempty"`
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`
}

// Revoke asks the server to revoke a lease (POST /v1/revoke), with the admin
// token (WithAdminToken) in place of the bearer token. Errors:
// lease.ErrInvalid (checked here first), lease.ErrNotFound, ErrUnauthorized
// (a wrong or missing admin token), ErrForbidden (the server takes no
// revokes), lease.ErrUnavailable, ctx's error, or an *Error.
func (c *Client) Revoke(ctx context.Context, req lease.RevokeRequest) (lease.Info, error) {
	if err := req.Validate(); err != nil {
		return lease.Info{}, err
	}
	body := revokeBody{Name: req.Name, Token: uint64(req.Token), Reason: req.Reason, By: req.By}
	var out revokeJSON
	if err := c.callAs(ctx, c.admin, "revoke", subject{name: req.Name, tok: req.Token}, "/v1/revoke", body, &out); err != nil {
		return lease.Info{}, err
	}
	if !out.Revoked {
		return lease.Info{}, fmt.Errorf("httpapi: revoke %q: the server answered 200 without \"revoked\": true", req.Name)
	}
	return infoOf(out.infoJSON)
}

// History reads one page of the server's history (GET /v1/history).
// Errors: lease.ErrInvalid (checked here first), lease.ErrUnavailable,
// ctx's error, or an *Error.
func (c *Client) History(ctx context.Context, req lease.HistoryRequest) (lease.HistoryPage, error) {
	if err := req.Validate(); err != nil {
		return lease.HistoryPage{}, err
	}
	q := url.Values{}
	if req.Name != "" {
		q.Set("name", req.Name)
	}
	if !req.Since.IsZero() {
		q.Set("since", req.Since.UTC().Format(time.RFC3339Nano))
	}
	if req.After != 0 {
		q.Set("after", strconv.FormatUint(req.After, 10))
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Newest {
		q.Set("order", "newest")
	}
	p := "/v1/history"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var out historyJSON
	if err := c.call(ctx, "history", subject{name: req.Name}, p, nil, &out); err != nil {
		return lease.HistoryPage{}, err
	}
	page := lease.HistoryPage{Events: make([]lease.Event, 0, len(out.Events)), Next: out.Next}
	for _, j := range out.Events {
		e, err := eventOf(j)
		if err != nil {
			return lease.HistoryPage{}, err
		}
		page.Events = append(page.Events, e)
	}
	return page, nil
}
