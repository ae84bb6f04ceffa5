package token_test

import (
	"context"
	"strings"
	"testing"

	"github.com/picketlock/picket/token"
)

// TestOldDocsPostgreSQL replays, on a real PostgreSQL, the two traps of the
// README's former fencing section — the control for the Example tests that
// replaced it: its Guard statement ("... WHERE excluded.token >= token")
// fails with an ambiguous column, and its "fence INTEGER" column overflows at
// 2^31. The statements the package writes work.
func TestOldDocsPostgreSQL(t *testing.T) {
	ctx := context.Background()
	db := openPostgres(t)
	g := mustGuard(t, db, token.PostgreSQL, token.DefaultTable)

	old := `INSERT INTO fences (resource, token) VALUES ($1, $2)
		ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE excluded.token >= token`
	for i := 0; i < 2; i++ { // the second time, the conflict path runs
		_, err := db.ExecContext(ctx, old, "r", int64(5))
		if i == 1 && (err == nil || !strings.Contains(err.Error(), `column reference "token" is ambiguous`)) {
			t.Errorf("the old README statement on a conflict: %v; want the ambiguous column error", err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := db.ExecContext(ctx, g.AdmitSQL(), "r", int64(5+i)); err != nil {
			t.Errorf("AdmitSQL: %v", err)
		}
	}

	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id bigint PRIMARY KEY, result text, fence INTEGER NOT NULL DEFAULT 0);
		INSERT INTO jobs (id) VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	res, err := db.ExecContext(ctx, `UPDATE jobs SET result = $1, fence = $2 WHERE id = 42 AND fence <= $2`, "x", int64(1)<<31)
	err = token.CheckUpdate(res, err, "jobs/42", 1<<31)
	if err == nil || !strings.Contains(err.Error(), "greater than maximum value for int4") {
		t.Errorf("token 2^31 into the old example's INTEGER fence: %v; want it refused as too large for int4", err)
	}
}
