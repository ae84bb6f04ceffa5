package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/picketlock/picket/storage/sqlite/internal/faultfs"
)

// FS is a mounted fault-injecting file system. Its methods are safe for
// concurrent use, also with the I/O going on in the mount.
type FS struct {
	dir    string
	server *fuse.Server
	root   *dirNode

	mu       sync.Mutex
	nextIno  uint64
	failSync syscall.Errno // non-zero: every fsync fails with it
	noSpace  bool
	stats    Stats
}

// Stats counts what the file system was asked to do (the client package's
// type, which the protocol sends as JSON).
type Stats = faultfs.Stats

// Mount mounts an empty file system at dir, which must be an empty
// directory, and serves it until Unmount.
func Mount(dir string) (*FS, error) {
	f := &FS{dir: dir, nextIno: 2}
	f.root = &dirNode{fs: f, live: map[string]*file{}, durable: map[string]*file{}}
	zero := time.Duration(0)
	server, err := fs.Mount(dir, f.root, &fs.Options{
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			FsName:        "faultfs",
			Name:          "faultfs",
			DirectMount:   true, // as root: mount(2), no fusermount needed
			DisableXAttrs: true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("faultfs: mount %s: %w", dir, err)
	}
	f.server = server
	return f, nil
}

// Dir returns the mount point.
func (f *FS) Dir() string { return f.dir }

// Unmount unmounts the file system, retrying for a few seconds while it is
// busy (a process still has a file open).
func (f *FS) Unmount() error {
	var err error
	for range 50 {
		if err = f.server.Unmount(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("faultfs: unmount %s: %w", f.dir, err)
}

// FailSync makes every later fsync and fdatasync, of a file or of the
// directory, fail with errno (syscall.EIO for an I/O error) and make
// nothing durable. FailSync(0) makes them work again.
func (f *FS) FailSync(errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSync = errno
}

// NoSpace, while on, fails with ENOSPC every write or fallocate that would
// make a file longer. Writes within a file's length still succeed.
func (f *FS) NoSpace(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noSpace = on
}

// Stats returns the counts so far.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// PowerLoss throws away everything not synced: every file goes back to its
// durable bytes and the directory to its durable entries (see the package
// doc). Kill the processes using the mount first.
func (f *FS) PowerLoss() { f.powerLoss(nil) }

// TornPowerLoss is a power loss that finds part of what was not synced on
// the disk: each 512-byte sector of each unsynced write, each unsynced
// change of a file's length and each unsynced change to the directory
// survives or not, independently, with probability 1/2 (seeded by seed), so
// later writes may survive where earlier ones did not. What was synced
// survives, as with PowerLoss.
func (f *FS) TornPowerLoss(seed uint64) { f.powerLoss(rand.New(rand.NewPCG(seed, seed))) }

// Sector is the unit in which TornPowerLoss keeps or drops unsynced writes.
const Sector = faultfs.Sector

func (f *FS) powerLoss(rng *rand.Rand) {
	keep := func() bool { return rng != nil && rng.IntN(2) == 0 }
	d := f.root
	f.mu.Lock()
	files := map[*file]bool{}
	for _, fl := range d.live {
		files[fl] = true
	}
	for _, fl := range d.durable {
		files[fl] = true
	}
	// The directory: every name whose entry differs between live and
	// durable is a change, kept or not.
	after := maps.Clone(d.durable)
	for name, fl := range d.live {
		if d.durable[name] != fl && keep() {
			after[name] = fl
		}
	}
	for name := range d.durable {
		if _, ok := d.live[name]; !ok && keep() {
			delete(after, name)
		}
	}
	for name, fl := range d.live {
		if after[name] != fl {
			f.stats.LostFiles++
		}
	}
	for name := range after {
		if _, ok := d.live[name]; !ok {
			f.stats.LostFiles++
		}
	}
	var inodes []*fs.Inode
	for fl := range files {
		now := slices.Clone(fl.durable)
		for _, c := range fl.pending {
			now = c.applyTorn(now, keep)
		}
		f.stats.LostBytes += diffBytes(fl.live, now)
		fl.live, fl.durable, fl.pending = now, slices.Clone(now), nil
		if fl.inode != nil {
			inodes = append(inodes, fl.inode)
		}
	}
	names := slices.Collect(maps.Keys(d.live))
	d.live, d.durable = after, maps.Clone(after)
	f.stats.PowerLosses++
	f.mu.Unlock()

	// Outside the lock: dropping cached pages may make the kernel write
	// dirty mapped pages back to us first.
	for _, in := range inodes {
		in.NotifyContent(0, 0)
	}
	for _, name := range names {
		d.NotifyEntry(name)
	}
}

// applyTorn applies to b the sectors of c that keep says survive.
func (c change) applyTorn(b []byte, keep func() bool) []byte {
	if c.data == nil {
		if keep() {
			b = resize(b, c.size)
		}
		return b
	}
	for lo := c.off; lo < c.off+len(c.data); {
		hi := min((lo/Sector+1)*Sector, c.off+len(c.data))
		if keep() {
			if hi > len(b) {
				b = resize(b, hi)
			}
			copy(b[lo:hi], c.data[lo-c.off:hi-c.off])
		}
		lo = hi
	}
	return b
}

// diffBytes returns how many bytes of live differ from durable, counting a
// difference in length in full.
func diffBytes(live, durable []byte) int {
	n := max(len(live), len(durable)) - min(len(live), len(durable))
	for i := range min(len(live), len(durable)) {
		if live[i] != durable[i] {
			n++
		}
	}
	return n
}

func (f *FS) ino() uint64 {
	f.nextIno++
	return f.nextIno
}
