package token_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/picketlock/picket/token"
)

// TestCheckUpdate runs the fenced UPDATE pattern against a real SQLite file.
func TestCheckUpdate(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id TEXT PRIMARY KEY, result TEXT, fence INTEGER NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) VALUES ('42')`); err != nil {
		t.Fatal(err)
	}
	update := func(id, result string, tok token.Token) error {
		res, err := db.ExecContext(ctx, `UPDATE jobs SET result = ?, fence = ? WHERE id = ? AND fence <= ?`,
			result, int64(tok), id, int64(tok))
		return token.CheckUpdate(res, err, "job:"+id, tok)
	}
	steps := []struct {
		name   string
		id     string
		result string
		token  token.Token
		stale  bool
		want   string // the row's result afterwards
	}{
		{name: "first holder", id: "42", result: "A1", token: 2, want: "A1"},
		{name: "same holder again", id: "42", result: "A2", token: 2, want: "A2"},
		{name: "newer holder", id: "42", result: "B", token: 3, want: "B"},
		{name: "stale holder", id: "42", result: "A3", token: 2, stale: true, want: "B"},
		{name: "missing row looks stale", id: "7", result: "X", token: 9, stale: true, want: "B"},
	}
	for _, s := range steps {
		err := update(s.id, s.result, s.token)
		if s.stale {
			var got *token.StaleError
			if !errors.As(err, &got) || !errors.Is(err, token.ErrStale) {
				t.Fatalf("%s: %v, want a *StaleError", s.name, err)
			}
			want := &token.StaleError{Resource: "job:" + s.id, Token: s.token}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: StaleError (-want +got):\n%s", s.name, diff)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var result string
		if err := db.QueryRowContext(ctx, `SELECT result FROM jobs WHERE id = '42'`).Scan(&result); err != nil {
			t.Fatal(err)
		}
		if result != s.want {
			t.Errorf("%s: result = %q, want %q", s.name, result, s.want)
		}
	}
}

func TestCheckUpdateError(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	res, err := db.ExecContext(ctx, `UPDATE no_such_table SET x = 1`)
	got := token.CheckUpdate(res, err, "r", 1)
	if got == nil || !errors.Is(got, err) || errors.Is(got, token.ErrStale) {
		t.Errorf("CheckUpdate with a failed statement = %v; want it wrapping %v, not ErrStale", got, err)
	}

	errRows := errors.New("rows affected unsupported")
	got = token.CheckUpdate(brokenResult{errRows}, nil, "r", 1)
	if !errors.Is(got, errRows) || errors.Is(got, token.ErrStale) {
		t.Errorf("CheckUpdate with a failing RowsAffected = %v; want it wrapping %v", got, errRows)
	}
}

// brokenResult is a sql.Result whose RowsAffected fails.
type brokenResult struct{ err error }

var _ sql.Result = brokenResult{}

func (r brokenResult) LastInsertId() (int64, error) { return 0, r.err }
func (r brokenResult) RowsAffected() (int64, error) { return 0, r.err }
