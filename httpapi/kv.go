package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/lease/storekit"
	"github.com/picketlock/picket/token"
)

// kvPut answers PUT /v1/kv/{key...}: the body is the value, the
// Fencing-Token header (required, at least 1) the writer's token.
func (s *Server) kvPut(w http.ResponseWriter, r *http.Request) error {
	key, tok, err := s.kvWrite(r)
	if err != nil {
		return err
	}
	value, ok := bodyBytes(r)
	if !ok { // not read by route: a test calling the handler directly
		if value, err = io.ReadAll(r.Body); err != nil {
			return bodyError(err)
		}
	}
	if err := s.kv.PutFenced(r.Context(), key, value, tok); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, kvPutJSON{Key: key, Token: uint64(tok)})
}

// kvDelete answers DELETE /v1/kv/{key...}: the Fencing-Token header
// (required) must be at least the highest token the key has seen; the value
// goes and the token stays, as the key's highest.
func (s *Server) kvDelete(w http.ResponseWriter, r *http.Request) error {
	key, tok, err := s.kvWrite(r)
	if err != nil {
		return err
	}
	if err := s.kv.DeleteFenced(r.Context(), key, tok); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, kvDeleteJSON{Key: key, Token: uint64(tok), Deleted: true})
}

// kvGet answers GET /v1/kv/{key...} with the raw value and, in the
// Fencing-Token header, the highest token the key has seen.
func (s *Server) kvGet(w http.ResponseWriter, r *http.Request) error {
	key, err := s.kvKey(r)
	if err != nil {
		return err
	}
	value, tok, err := s.kv.GetFenced(r.Context(), key)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(value)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	token.Set(h, tok)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(value)
	return nil
}

// kvKey checks that the server keeps fenced values and returns the
// request's key, validated.
func (s *Server) kvKey(r *http.Request) (string, error) {
	if s.kv == nil {
		return "", errNoKV
	}
	key := r.PathValue("key")
	if err := storekit.ValidateName(key); err != nil {
		return "", err
	}
	return key, nil
}

// kvWrite is kvKey plus the writer's Fencing-Token, which PUT and DELETE
// require.
func (s *Server) kvWrite(r *http.Request) (string, token.Token, error) {
	key, err := s.kvKey(r)
	if err != nil {
		return "", 0, err
	}
	tok, err := token.FromRequest(r)
	return key, tok, err
}

var errNoKV = fmt.Errorf("httpapi: this server keeps no fenced values: %w", lease.ErrNoKey)
