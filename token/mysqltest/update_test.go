package mysqltest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/picketlock/picket/token"
)

// fencedUpdate is CheckUpdate's pattern on MySQL.
const fencedUpdate = "UPDATE jobs SET result = ?, fence = ? WHERE id = ? AND fence <= ?"

// TestCheckUpdateMySQL is token's TestCheckUpdate on a real MariaDB, with
// the client counting matched rows (clientFoundRows=true), as CheckUpdate's
// doc asks of MySQL: no row affected is ErrNoMatch — never ErrStale — and an
// invalid token is refused, so that the caller rolls back and never stores
// it. Counting changed rows (go-sql-driver's default), the holder's second
// identical write changes nothing and is ErrNoMatch too: the trap the doc
// names, shown here so that it stays true.
func TestCheckUpdateMySQL(t *testing.T) {
	for _, fr := range foundRows {
		t.Run(fr.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openMySQL(t, fr.p)
			for _, q := range []string{"CREATE TABLE jobs (id VARCHAR(64) PRIMARY KEY, result TEXT, fence BIGINT NOT NULL DEFAULT 0)",
				"INSERT INTO jobs (id) VALUES ('42')"} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			update := func(id, result string, tok token.Token) error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				res, err := tx.ExecContext(ctx, fencedUpdate, result, int64(tok), id, int64(tok))
				if err := token.CheckUpdate(res, err, "jobs/"+id, tok); err != nil {
					return err
				}
				return tx.Commit()
			}
			var again error // the identical second write
			if fr.p == nil {
				again = token.ErrNoMatch
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
				{name: "same holder, same values", id: "42", result: "A2", token: 2, wantErr: again, want: "A2"},
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
		})
	}
}
