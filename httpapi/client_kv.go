package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// PutFenced stores value under key on the server (PUT /v1/kv/{key}) with tok
// in the Fencing-Token header. Errors: lease.ErrInvalid for a bad key, token
// or a value over MaxBodyBytes (nothing is sent), a *token.StaleError
// (token.ErrStale) when the key has seen a higher token, lease.ErrUnavailable,
// ctx's error, or an *Error.
func (c *Client) PutFenced(ctx context.Context, key string, value []byte, tok token.Token) error {
	if err := storekit.ValidateName(key); err != nil {
		return err
	}
	if err := storekit.ValidateToken(tok); err != nil {
		return err
	}
	if len(value) > MaxBodyBytes {
		return fmt.Errorf("httpapi: %w: value of %d bytes is over %d", lease.ErrInvalid, len(value), MaxBodyBytes)
	}
	hdr := http.Header{}
	token.Set(hdr, tok)
	resp, err := c.send(ctx, "put", subject{name: key, tok: tok}, http.MethodPut, "/v1/kv/"+escapeName(key),
		"application/octet-stream", bytes.NewReader(value), hdr)
	if err != nil {
		return err
	}
	closeBody(resp)
	return nil
}

// GetFenced returns the value under key and the highest token the key has
// seen (GET /v1/kv/{key}). Errors: lease.ErrInvalid, an *Error unwrapping
// to lease.ErrNoKey (matching lease.ErrNotFound) for a key without a value,
// lease.ErrUnavailable, ctx's error, or an *Error.
func (c *Client) GetFenced(ctx context.Context, key string) ([]byte, token.Token, error) {
	if err := storekit.ValidateName(key); err != nil {
		return nil, 0, err
	}
	resp, err := c.send(ctx, "get", subject{name: key}, http.MethodGet, "/v1/kv/"+escapeName(key), "", nil, nil)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == CodeNotFound {
			e.detail = lease.ErrNoKey // as the stores answer
		}
		return nil, 0, err
	}
	defer closeBody(resp)
	value, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("httpapi: get %q: reading the value: %w", key, err)
	}
	if len(value) > MaxBodyBytes {
		return nil, 0, fmt.Errorf("httpapi: get %q: the value is over %d bytes", key, MaxBodyBytes)
	}
	tok, err := token.Parse(resp.Header.Get(token.Header))
	if err != nil {
		return nil, 0, fmt.Errorf("httpapi: get %q: bad %s header in the answer: %w", key, token.Header, err)
	}
	return value, tok, nil
}

// DeleteFenced removes the value under key on the server (DELETE
// /v1/kv/{key}) with tok in the Fencing-Token header; the key keeps tok as
// its highest token, so a later write with a lower one is refused. Errors:
// lease.ErrInvalid for a bad key or token (nothing is sent) or a token the
// server never issued, a *token.StaleError (token.ErrStale) when the key has
// seen a higher token, lease.ErrUnavailable, ctx's error, or an *Error.
func (c *Client) DeleteFenced(ctx context.Context, key string, tok token.Token) error {
	if err := storekit.ValidateName(key); err != nil {
		return err
	}
	if err := storekit.ValidateToken(tok); err != nil {
		return err
	}
	hdr := http.Header{}
	token.Set(hdr, tok)
	resp, err := c.send(ctx, "delete", subject{name: key, tok: tok}, http.MethodDelete, "/v1/kv/"+escapeName(key), "", nil, hdr)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	var out kvDeleteJSON
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("httpapi: delete %q: bad answer from the server: %w", key, err)
	}
	if !out.Deleted {
		return fmt.Errorf("httpapi: delete %q: the server answered 200 without \"deleted\": true", key)
	}
	return nil
}
