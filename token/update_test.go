package token_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/picketlock/picket/token"
)

// TestCheckUpdate runs the fenced UPDATE pattern against a real SQLite file.
// No row affected is ErrNoMatch — never ErrStale, since a missing row is no
// sign of a newer holder — and an invalid token is refused, so that the
// caller rolls back and never stores it.
func TestCheckUpdate(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id TEXT PRIMARY KEY, result TEXT, fence INTEGER NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) VALUES ('42')`); err != nil {
		t.Fatal(err)
	}
	// update runs the fenced UPDATE in a transaction, committed only if
	// CheckUpdate accepts it.
	update := func(id, result string, tok token.Token) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET result = ?, fence = ? WHERE id = ? AND fence <= ?`,
			result, int64(tok), id, int64(tok))
		if err := token.CheckUpdate(res, err, "jobs/"+id, tok); err != nil {
			return err
		}
		return tx.Commit()
	}
	steps := []struct {
		name    string
		id      string
		result  string
		token   token.Token
		wantErr error // the sentinel the error must match; never ErrStale
		want    string
	}{
		{name: "first holder", id: "42", result: "A1", token: 2, want: "A1"},
		{name: "same holder again", id: "42", result: "A2", token: 2, want: "A2"},
		{name: "newer holder", id: "42", result: "B", token: 3, want: "B"},
		{name: "stale holder", id: "42", result: "A3", token: 2, wantErr: token.ErrNoMatch, want: "B"},
		{name: "missing row", id: "7", result: "X", token: 9, wantErr: token.ErrNoMatch, want: "B"},
		{name: "zero token", id: "42", result: "Z", token: 0, wantErr: token.ErrZero, want: "B"},
		{name: "token 2^53", id: "42", result: "Z", token: token.Max + 1, wantErr: token.ErrInvalid, want: "B"},
		{name: "token 2^63 (int64 wraps)", id: "42", result: "Z", token: 1 << 63, wantErr: token.ErrInvalid, want: "B"},
		{name: "largest token after the refusals", id: "42", result: "M", token: token.Max, want: "M"},
	}
	for _, s := range steps {
		err := update(s.id, s.result, s.token)
		switch {
		case s.wantErr == nil && err != nil:
			t.Errorf("%s: %v", s.name, err)
		case s.wantErr != nil && (!errors.Is(err, s.wantErr) || errors.Is(err, token.ErrStale) || errors.Is(err, token.ErrNotFound)):
			t.Errorf("%s: %v; want it matching %v and neither ErrStale nor ErrNotFound", s.name, err, s.wantErr)
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

// TestCheckUpdateInvalidBeforeError checks that the token is validated before
// anything else is looked at.
func TestCheckUpdateInvalidBeforeError(t *testing.T) {
	err := token.CheckUpdate(nil, errors.New("boom"), "r", 0)
	if !errors.Is(err, token.ErrZero) {
		t.Errorf("CheckUpdate(token 0, failed statement) = %v, want ErrZero", err)
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
