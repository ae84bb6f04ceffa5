package mysqltest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/picketlock/picket/token"
)

// The upsert of a jobs (id, result, fence) row, in four spellings: Rows'
// own (every column compares with the row's fence, the fence raised last),
// the same with the fence's assignment first, and the order-dependent form
// ("raise the fence, then write the columns where the fence is now the
// token") in both orders.
const (
	admitted = "`id` = VALUES(`id`) AND `fence` <= VALUES(`fence`)"
	upsertOf = "INSERT INTO `jobs` (`id`, `result`, `fence`) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE "
	setRows  = "`result` = IF(" + admitted + ", VALUES(`result`), `result`)"
	setFence = "`fence` = IF(" + admitted + ", VALUES(`fence`), `fence`)"
	raise    = "`fence` = GREATEST(`fence`, VALUES(`fence`))"
	ifRaised = "`result` = IF(`fence` = VALUES(`fence`), VALUES(`result`), `result`)"
)

// TestUpsertOrderMySQL proves, on the real server, that the order of an
// upsert's assignments can decide what it writes, and that Rows' statement
// is one whose order cannot: MariaDB evaluates them left to right (as MySQL
// does) by default, and all from the row as it was under
// SIMULTANEOUS_ASSIGNMENT. From a row (A, fence 5), a newer holder (token 6,
// result B), the holder again (6, B2) and a stale one (4, Z) upsert in
// turn. Rows' statement, in its order and the other, must write (B, 6),
// (B2, 6) and refuse Z, in both sessions. The order-dependent form must
// write them only when it raises first and the server evaluates left to
// right, and lose the newer holder's result otherwise — the fence moved,
// the result did not, and the statement reported a changed row: the hazard
// Rows' statement is immune to. If the server evaluated the assignments in
// any other way, this test would say so.
func TestUpsertOrderMySQL(t *testing.T) {
	r, err := token.NewRows(token.MySQL, "jobs", "id", "fence", "result")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(upsertOf+setRows+", "+setFence, r.UpsertSQL()); diff != "" {
		t.Fatalf("Rows' upsert is not the one this test proves (-want +got):\n%s", diff)
	}
	spellings := []struct {
		name string
		sql  string
		// lost: the sessions in which this spelling loses the newer
		// holder's result
		lost map[string]bool
	}{
		{"Rows: the fence last", upsertOf + setRows + ", " + setFence, nil},
		{"Rows' assignments, the fence first", upsertOf + setFence + ", " + setRows, nil},
		{"raise first, then write where raised", upsertOf + raise + ", " + ifRaised, map[string]bool{"simultaneous": true}},
		{"write where raised, then raise", upsertOf + ifRaised + ", " + raise, map[string]bool{"left to right": true, "simultaneous": true}},
	}
	modes := []struct {
		name string
		p    params
	}{
		{"left to right", nil},
		{"simultaneous", params{"sql_mode": "'STRICT_TRANS_TABLES,SIMULTANEOUS_ASSIGNMENT'"}},
	}
	for _, m := range modes {
		db, _ := openMySQL(t, m.p)
		ctx := context.Background()
		var mode string
		if err := db.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(mode, "SIMULTANEOUS_ASSIGNMENT"); got != (m.name == "simultaneous") {
			t.Fatalf("%s: the session's sql_mode is %q", m.name, mode)
		}
		if _, err := db.ExecContext(ctx, jobsTable); err != nil {
			t.Fatal(err)
		}
		for _, s := range spellings {
			t.Run(m.name+"/"+s.name, func(t *testing.T) {
				if _, err := db.ExecContext(ctx, "DELETE FROM jobs"); err != nil {
					t.Fatal(err)
				}
				if _, err := db.ExecContext(ctx, "INSERT INTO jobs VALUES ('7', 'A', 5)"); err != nil {
					t.Fatal(err)
				}
				steps := []struct {
					tok    int64
					result string
					want   row
				}{
					{6, "B", row{"B", 6}},   // a newer holder
					{6, "B2", row{"B2", 6}}, // the holder again
					{4, "Z", row{"B2", 6}},  // a stale one
				}
				for i, st := range steps {
					if _, err := db.ExecContext(ctx, s.sql, "7", st.result, st.tok); err != nil {
						t.Fatal(err)
					}
					got := readJobs(t, db)["7"]
					want := st.want
					if s.lost[m.name] && i == 0 {
						want = row{"A", 6} // the fence moved, the result did not
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("step %d (token %d, %s) (-want +got):\n%s", i, st.tok, st.result, diff)
					}
					if s.lost[m.name] && i == 0 {
						break // the rest depends on the lost write
					}
				}
			})
		}
	}
}
