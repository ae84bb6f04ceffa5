package sqlite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode"
	"unicode/utf8"
)

// A file given to Open is identified before anything changes it: nothing of
// a file that is refused (another application's, a text file, a corrupt
// file) is chmodded, migrated or given a -wal. checkFile runs in enter,
// holding the gate, before the writer connection opens.

// sqliteMagic begins every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// checkFile identifies the file, refuses it if it is not a picket database
// (or an empty file, which becomes one) or if its pages are corrupt, and
// only then makes the files private (tightenModes): a refused file keeps
// its mode.
func (s *Store) checkFile() error {
	head, err := s.readHead()
	if err != nil {
		return err
	}
	if len(head) > 0 && !bytes.HasPrefix(head, sqliteMagic) {
		return fmt.Errorf("%w: it is not an SQLite database at all but %s; left untouched: check the path (-db)",
			ErrNotPicket, describeHead(head))
	}
	if err := s.inspect(); err != nil {
		return nameCorrupt(err, head)
	}
	return s.tightenModes(s.real)
}

// readHead returns the first 100 bytes of the file (SQLite's header), fewer
// if the file is shorter. It reads through the process's descriptor of the
// inode (inode.go), kept open while any Store of the process uses the file:
// closing a descriptor of its own would drop every POSIX lock the process
// holds on the file, SQLite's included.
func (s *Store) readHead() ([]byte, error) {
	head := make([]byte, 100)
	var n int
	var err error
	if f := s.m.descriptor(); f != nil { // gate_linux.go
		n, err = f.ReadAt(head, 0)
	} else { // the one-WAL check is off (tests): no descriptor is kept
		createMu.Lock()
		defer createMu.Unlock()
		var f *os.File
		if f, err = os.Open(s.real); err != nil {
			return nil, err
		}
		defer f.Close()
		n, err = f.ReadAt(head, 0)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the header of %s: %w", s.real, err)
	}
	return head[:n], nil
}

// headerAppID returns the application_id in an SQLite header (0 if the
// header is too short). It is a hint: a change not yet checkpointed lives
// in the -wal.
func headerAppID(head []byte) uint32 {
	if len(head) < 72 {
		return 0
	}
	return binary.BigEndian.Uint32(head[68:72])
}

// nameCorrupt says whose file a corrupt database is, from its header: a
// picket database is ErrCorrupt (restore it); another application's is
// ErrNotPicket (never picket's to restore).
func nameCorrupt(err error, head []byte) error {
	if !errors.Is(err, ErrCorrupt) {
		return err
	}
	switch app := headerAppID(head); app {
	case picketAppID:
		return fmt.Errorf("a picket database (application_id %#x) whose pages are damaged: %w", app, err)
	case 0:
		return fmt.Errorf("an SQLite database without an application_id (picket's before its first store opened, or another program's): %w", err)
	default:
		return fmt.Errorf("%w: it is another application's SQLite database (application_id %#x, picket's is %#x), "+
			"and its pages are damaged; left untouched: check the path (-db)", ErrNotPicket, app, picketAppID)
	}
}

// describeHead names what a file that is not an SQLite database looks like
// from its first bytes.
func describeHead(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "a gzip file"
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "an executable (ELF)"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return "a zip file"
	case bytes.HasPrefix(head, []byte("%PDF")):
		return "a PDF file"
	}
	text := head
	for !utf8.Valid(text) && len(text) > 0 { // a rune cut at byte 100
		text = text[:len(text)-1]
	}
	printable := utf8.Valid(text) && len(text) > 0
	for _, r := range string(text) {
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			printable = false
			break
		}
	}
	if printable {
		line, _, _ := bytes.Cut(text, []byte("\n"))
		if len(line) > 40 {
			line = append(line[:37:37], "..."...)
		}
		return fmt.Sprintf("a text file beginning %q", line)
	}
	n := min(len(head), 8)
	return fmt.Sprintf("a binary file beginning % x", head[:n])
}
