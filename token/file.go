package token

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Fenced files: a whole file replaced under a fencing token, on a local or
// shared POSIX file system. Beside the data file PATH live two files of
// picket's:
//
//	PATH.lock   empty, never replaced: the lock (an open file description
//	            lock, F_OFD_SETLKW, on its first byte), which the kernel drops
//	            when the process holding it dies;
//	PATH.fence  the highest token admitted, in decimal, replaced whole.
//
// WriteFile, under the lock: reads the fence; refuses a lower token; makes
// a higher one durable first (PATH.fence.tmp written, synced, renamed over
// PATH.fence, the directory synced); then replaces the data the same way
// (PATH.tmp, synced, renamed over PATH, the directory synced); then lets
// the lock go. A crash at any point leaves the fence at least as high as
// the token of the data on disk, so a lower token never wins afterwards; it
// may leave the fence raised over the old data (the writer did not finish:
// its next write, or the next holder's, replaces it).
//
// What the file system must guarantee: rename(2) replaces atomically and
// fsync(2) of a file and of its directory makes the change durable (ext4,
// xfs, btrfs, tmpfs in memory); OFD locks (Linux 3.15+). On NFS, rename is
// atomic on the server and the Linux client sends OFD locks to the server as
// POSIX byte-range locks (NLM for NFSv3, the protocol's own locks for
// NFSv4), revalidating its cache when it takes one (close-to-open), so the
// compare and the write hold across clients — but the NFS lock is itself a
// lease of the client's: a client cut off from the server longer than the
// server's lease time (NFSv4: 90 s by default) loses its locks without
// knowing, and its later write can race another client's. The fence is then
// only as good as the network's; keep such writers on one machine, or use
// a store with a real conditional write (Guard, the object-store or Redis
// helpers). Not for file systems without working locks (some FUSE and SMB
// mounts): there WriteFile fails when the kernel refuses the lock.
//
// Only Linux has OFD locks; elsewhere the file helpers return an error
// matching ErrUnsupported.

// ErrUnsupported is the file helpers' error on a system without open file
// description locks (anything but Linux).
var ErrUnsupported = errors.New("token: fenced files need Linux's open file description locks")

// fileHook is nil in production; the crash tests set it (export_test.go)
// to die at the named points of WriteFile: "fence-raised" (the higher
// token is durable, the data not yet replaced) and "data-replaced" (the
// data renamed into place and its directory synced).
var fileHook func(point string)

func hookFile(point string) {
	if fileHook != nil {
		fileHook(point)
	}
}

// WriteFile replaces the file at path with data, fenced by t: if t is at
// least the highest token admitted for path (an equal token is admitted:
// the holder may write many times), the highest becomes t, durably, and
// then path holds data, durably, with mode perm (for a new file; an
// existing file's mode is kept). ctx bounds the wait for the lock (another
// writer of path holds it only for its write); once the write has begun it
// runs to its end.
//
// Errors: *StaleError (matching ErrStale) if a higher token was admitted:
// nothing was written, stop; ErrZero or an error matching ErrInvalid for a
// bad token or path (empty, a directory, a symbolic link, a name ending in
// .lock, .fence or .tmp), before anything is touched; ctx's error if the
// lock did not come in time; ErrUnsupported off Linux; the file system's
// error, wrapped.
func WriteFile(ctx context.Context, path string, t Token, data []byte, perm fs.FileMode) error {
	if err := check(t); err != nil {
		return err
	}
	if err := checkFilePath(path); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, path, true)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := readFence(path)
	if err != nil {
		return err
	}
	if t < h {
		return &StaleError{Resource: path, Token: t, Highest: h}
	}
	if t > h {
		if err := replaceFile(path+".fence", []byte(t.String()+"\n"), 0o600, 0o600); err != nil {
			return fmt.Errorf("token: raise the fence of %q: %w", path, err)
		}
	}
	hookFile("fence-raised")
	if err := replaceFile(path, data, perm, 0); err != nil {
		return fmt.Errorf("token: replace %q: %w", path, err)
	}
	hookFile("data-replaced")
	return nil
}

// ReadFile returns the contents of the file at path and the highest token
// admitted for it (zero if none), read together under the lock so that no
// write is halfway between them. The data was written with a token no
// higher than that. ctx bounds the wait for the lock.
//
// Errors: an error matching fs.ErrNotExist if path holds no data (its fence
// may exist: a RemoveFile); ErrInvalid for a bad path; ctx's error;
// ErrUnsupported off Linux; the file system's error, wrapped.
func ReadFile(ctx context.Context, path string) ([]byte, Token, error) {
	if err := checkFilePath(path); err != nil {
		return nil, 0, err
	}
	unlock, err := lockFile(ctx, path, false)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	h, err := readFence(path)
	if err != nil {
		return nil, 0, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, h, fmt.Errorf("token: read %q: %w", path, err)
	}
	return data, h, nil
}

// RemoveFile removes the file at path, fenced by t as WriteFile writes,
// and keeps its fence (raised to t), so that a later write with a lower
// token stays stale. Removing a file that does not exist raises the fence
// all the same.
//
// Errors: as WriteFile's.
func RemoveFile(ctx context.Context, path string, t Token) error {
	if err := check(t); err != nil {
		return err
	}
	if err := checkFilePath(path); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, path, true)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := readFence(path)
	if err != nil {
		return err
	}
	if t < h {
		return &StaleError{Resource: path, Token: t, Highest: h}
	}
	if t > h {
		if err := replaceFile(path+".fence", []byte(t.String()+"\n"), 0o600, 0o600); err != nil {
			return fmt.Errorf("token: raise the fence of %q: %w", path, err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("token: remove %q: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// checkFilePath refuses a path the helpers cannot fence.
func checkFilePath(path string) error {
	if path == "" {
		return invalid("empty file path")
	}
	base := filepath.Base(path)
	for _, suffix := range []string{".lock", ".fence", ".tmp"} {
		if strings.HasSuffix(base, suffix) {
			return invalid("file %q: names ending in %s are the fence's own", path, suffix)
		}
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("token: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return invalid("file %q is a symbolic link: fence the file it names (a rename would replace the link)", path)
	case !fi.Mode().IsRegular():
		return invalid("file %q is not a regular file (%s)", path, fi.Mode().Type())
	}
	return nil
}

// readFence returns the highest token recorded in path.fence, zero if none.
func readFence(path string) (Token, error) {
	b, err := os.ReadFile(path + ".fence")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("token: read the fence of %q: %w", path, err)
	}
	t, err := Parse(strings.TrimSuffix(string(b), "\n"))
	if err != nil {
		return 0, fmt.Errorf("token: the fence of %q holds %q, not a token (%w): refusing to guess", path, b, err)
	}
	return t, nil
}

// replaceFile writes data to path.tmp, syncs it, renames it over path and
// syncs the directory. perm is a new file's mode; force, if not zero, is
// the mode whatever path had.
func replaceFile(path string, data []byte, perm, force fs.FileMode) error {
	mode := perm
	if force != 0 {
		mode = force
	} else if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // an old tmp left by a crash keeps its mode otherwise
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("token: sync directory %q: %w", dir, err)
	}
	return nil
}

// lockFile takes path.lock's lock, exclusive or shared, waiting until ctx
// ends, and returns its release. It polls (a blocked F_OFD_SETLKW cannot be
// cancelled), from 1 ms up to 20 ms between tries.
func lockFile(ctx context.Context, path string, exclusive bool) (func(), error) {
	if !haveOFD {
		return nil, ErrUnsupported // before creating anything
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("token: open the lock of %q: %w", path, err)
	}
	wait := time.Millisecond
	for {
		ok, err := tryLock(f, exclusive) // file_linux.go
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("token: lock %q: %w", path+".lock", err)
		}
		if ok {
			return func() { f.Close() }, nil // closing the description drops its lock
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("token: lock %q: %w", path+".lock", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}
