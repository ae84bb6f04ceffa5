package sqlite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/picketlock/picket/storage/sqlite"
)

// TestRefusedFileIdentified: a file Open refuses is identified before
// anything changes it, and the error says what it is. Each file is mode
// 0644 and owned by another user (nobody), as /etc/hosts is root's: as root
// Open could chmod it, and must not. A text file is "not an SQLite
// database", not "corrupt, restore from a backup"; another application's
// SQLite file is not picket's; a picket database with a damaged page is
// corrupt, and named a picket database. None of them changes mode, content,
// or gets a -wal or -shm.
//
// Control: the mutant identify-after-chmod (testdata/controls), today's old
// order: the files are made private first, and the text file is called
// corrupt.
func TestRefusedFileIdentified(t *testing.T) {
	requireRoot(t, "a file owned by another user, which only root can chmod")
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		want  error
		words []string
	}{
		{
			name: "text file",
			make: func(t *testing.T, path string) {
				hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n"
				if err := os.WriteFile(path, []byte(hosts+strings.Repeat("# padding\n", 500)), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want:  sqlite.ErrNotPicket,
			words: []string{"not an SQLite database", "text file", "127.0.0.1"},
		},
		{
			name: "another application's SQLite",
			make: func(t *testing.T, path string) {
				db, err := sql.Open("sqlite", "file:"+path)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{"PRAGMA application_id = 4242", "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('mine')"} {
					if _, err := db.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()
			},
			want:  sqlite.ErrNotPicket,
			words: []string{"another application", "0x1092"},
		},
		{
			name: "corrupt picket database",
			make: func(t *testing.T, path string) {
				s := mustOpenPath(t, path)
				for i := range 200 {
					acquire(t, s, fmt.Sprintf("job/%03d", i), "h", time.Hour)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				corruptPage(t, path, "leases")
			},
			want:  sqlite.ErrCorrupt,
			words: []string{"a picket database", "restore"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "file")
			tc.make(t, path)
			const nobody = 65534
			if err := os.Chown(path, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sqlite.Open(path)
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded; want %v", tc.want)
			}
			t.Logf("Open: %v", err)
			if !errors.Is(err, tc.want) {
				t.Errorf("Open: %v; want %v", err, tc.want)
			}
			if tc.want != sqlite.ErrCorrupt && errors.Is(err, sqlite.ErrCorrupt) {
				t.Errorf("Open calls %s corrupt: %v", tc.name, err)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode().Perm() != 0o644 || st.Uid != nobody {
				t.Errorf("the refused file changed: mode %#o owner %d; want 0644 owner %d", fi.Mode().Perm(), st.Uid, nobody)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("the refused file's content changed")
			}
			for _, suffix := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(path + suffix); err == nil {
					t.Errorf("the refused file got a %s", suffix)
				}
			}
		})
	}
}
