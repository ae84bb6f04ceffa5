package main

import (
	"context"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// file is one file's two versions. Every field is guarded by FS.mu.
type file struct {
	ino     uint64
	mode    uint32 // permission bits
	live    []byte
	durable []byte
	pending []change // what changed live since durable, in order
	mtime   time.Time
	inode   *fs.Inode // the kernel's latest handle on it, for cache drops
}

func (fl *file) attr(out *fuse.Attr) {
	out.Ino = fl.ino
	out.Mode = syscall.S_IFREG | fl.mode
	out.Nlink = 1
	out.Size = uint64(len(fl.live))
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 4096
	out.SetTimes(nil, &fl.mtime, &fl.mtime)
}

// dirNode is the root directory, the only one.
type dirNode struct {
	fs.Inode
	fs *FS

	// Guarded by fs.mu.
	live    map[string]*file
	durable map[string]*file // as of the last fsync of the directory
}

var (
	_ fs.NodeLookuper   = (*dirNode)(nil)
	_ fs.NodeReaddirer  = (*dirNode)(nil)
	_ fs.NodeCreater    = (*dirNode)(nil)
	_ fs.NodeUnlinker   = (*dirNode)(nil)
	_ fs.NodeFsyncer    = (*dirNode)(nil)
	_ fs.NodeGetattrer  = (*dirNode)(nil)
	_ fs.NodeFsyncer    = (*fileNode)(nil)
	_ fs.NodeOpener     = (*fileNode)(nil)
	_ fs.NodeReader     = (*fileNode)(nil)
	_ fs.NodeWriter     = (*fileNode)(nil)
	_ fs.NodeGetattrer  = (*fileNode)(nil)
	_ fs.NodeSetattrer  = (*fileNode)(nil)
	_ fs.NodeFlusher    = (*fileNode)(nil)
	_ fs.NodeAllocater  = (*fileNode)(nil)
	_ fs.NodeReleaser   = (*fileNode)(nil)
	_ fs.InodeEmbedder  = (*fileNode)(nil)
	_ fs.NodeStatfser   = (*dirNode)(nil)
	_ fs.InodeEmbedder  = (*dirNode)(nil)
	_ fs.NodeOpendirer  = (*dirNode)(nil)
	_ fs.NodeSetattrer  = (*dirNode)(nil)
	_ fs.NodeRmdirer    = (*dirNode)(nil)
	_ fs.NodeMkdirer    = (*dirNode)(nil)
	_ fs.NodeRenamer    = (*dirNode)(nil)
	_ fs.NodeLinker     = (*dirNode)(nil)
	_ fs.NodeSymlinker  = (*dirNode)(nil)
	_ fs.NodeMknoder    = (*dirNode)(nil)
	_ fs.NodeAccesser   = (*dirNode)(nil)
	_ fs.NodeOnAdder    = (*dirNode)(nil)
	_ fs.NodeGetxattrer = (*dirNode)(nil)
)

func (d *dirNode) OnAdd(ctx context.Context) {}

func (d *dirNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o755
	out.Nlink = 2
	out.Ino = 1
	return 0
}

func (d *dirNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return d.Getattr(ctx, fh, out)
}

func (d *dirNode) Access(ctx context.Context, mask uint32) syscall.Errno { return 0 }

func (d *dirNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}

func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	out.Blocks, out.Bfree, out.Bavail = 1<<20, 1<<19, 1<<19
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	if d.fs.noSpace {
		out.Bfree, out.Bavail = 0, 0
	}
	return 0
}

func (d *dirNode) Opendir(ctx context.Context) syscall.Errno { return 0 }

// node returns the kernel's inode for fl, made or found.
func (d *dirNode) node(ctx context.Context, fl *file) *fs.Inode {
	in := d.NewInode(ctx, &fileNode{fs: d.fs, f: fl}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: fl.ino})
	d.fs.mu.Lock()
	fl.inode = in
	d.fs.mu.Unlock()
	return in
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.fs.mu.Lock()
	fl, ok := d.live[name]
	if ok {
		fl.attr(&out.Attr)
	}
	d.fs.mu.Unlock()
	if !ok {
		return nil, syscall.ENOENT
	}
	return d.node(ctx, fl), 0
}

func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	d.fs.mu.Lock()
	entries := make([]fuse.DirEntry, 0, len(d.live))
	for name, fl := range d.live {
		entries = append(entries, fuse.DirEntry{Name: name, Ino: fl.ino, Mode: syscall.S_IFREG})
	}
	d.fs.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return fs.NewListDirStream(entries), 0
}

func (d *dirNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	d.fs.mu.Lock()
	fl, ok := d.live[name]
	switch {
	case ok && flags&syscall.O_EXCL != 0:
		d.fs.mu.Unlock()
		return nil, nil, 0, syscall.EEXIST
	case ok:
		if flags&syscall.O_TRUNC != 0 {
			fl.truncate(0)
		}
	default:
		fl = &file{ino: d.fs.ino(), mode: mode & 0o7777, mtime: time.Now()}
		d.live[name] = fl
	}
	fl.attr(&out.Attr)
	d.fs.mu.Unlock()
	return d.node(ctx, fl), nil, 0, 0
}

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	if _, ok := d.live[name]; !ok {
		return syscall.ENOENT
	}
	delete(d.live, name)
	return 0
}

// Fsync of the directory makes its entries durable.
func (d *dirNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	if e := d.fs.failSync; e != 0 {
		d.fs.stats.FailedSyncs++
		return e
	}
	clear(d.durable)
	for name, fl := range d.live {
		d.durable[name] = fl
	}
	d.fs.stats.DirSyncs++
	return 0
}

// What SQLite does not need is refused: one flat directory of plain files.

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.ENOTDIR }

func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EPERM
}

func (d *dirNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (d *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (d *dirNode) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// fileNode is the kernel's handle on a file. Several may point to one file
// over time (the kernel forgets inodes and looks them up again).
type fileNode struct {
	fs.Inode
	fs *FS
	f  *file
}

func (n *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		n.fs.mu.Lock()
		n.f.truncate(0)
		n.fs.mu.Unlock()
	}
	return nil, 0, 0 // no FOPEN_KEEP_CACHE: every open drops cached pages
}

func (n *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	n.f.attr(&out.Attr)
	return 0
}

func (n *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if size, ok := in.GetSize(); ok {
		n.f.truncate(int(size))
		n.f.mtime = time.Now()
	}
	if mode, ok := in.GetMode(); ok {
		n.f.mode = mode & 0o7777
	}
	n.f.attr(&out.Attr)
	return 0
}

func (n *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	live := n.f.live
	off = min(off, int64(len(live)))
	end := min(off+int64(len(dest)), int64(len(live)))
	return fuse.ReadResultData(slices.Clone(live[off:end])), 0
}

func (n *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	end := int(off) + len(data)
	if end > len(n.f.live) {
		if n.fs.noSpace {
			n.fs.stats.NoSpaceWrites++
			return 0, syscall.ENOSPC
		}
		n.f.live = resize(n.f.live, end)
	}
	copy(n.f.live[off:], data)
	n.f.pending = append(n.f.pending, change{off: int(off), data: slices.Clone(data)})
	n.f.mtime = time.Now()
	n.fs.stats.Writes++
	return uint32(len(data)), 0
}

func (n *fileNode) Allocate(ctx context.Context, fh fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	end := int(off + size)
	if mode&unix.FALLOC_FL_KEEP_SIZE != 0 || end <= len(n.f.live) {
		return 0
	}
	if n.fs.noSpace {
		n.fs.stats.NoSpaceWrites++
		return syscall.ENOSPC
	}
	n.f.truncate(end)
	return 0
}

// Fsync (and fdatasync) makes the file's live bytes durable; not its name
// (see dirNode.Fsync).
func (n *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	if e := n.fs.failSync; e != 0 {
		n.fs.stats.FailedSyncs++
		return e
	}
	n.f.durable = slices.Clone(n.f.live)
	n.f.pending = nil
	n.fs.stats.Syncs++
	return 0
}

// Flush (on close) makes nothing durable.
func (n *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno { return 0 }

func (n *fileNode) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno { return 0 }

// change is one change to a file's bytes: data written at off, or (data
// nil) the length set to size.
type change struct {
	off  int
	data []byte
	size int
}

func (fl *file) truncate(size int) {
	fl.live = resize(fl.live, size)
	fl.pending = append(fl.pending, change{size: size})
}

// resize returns b with length size, zero-filled when it grows.
func resize(b []byte, size int) []byte {
	if size <= len(b) {
		return b[:size]
	}
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		clear(b[old:])
		return b
	}
	return append(b, make([]byte, size-len(b))...)
}
