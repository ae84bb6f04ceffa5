// Command server serves one faultfs mount for a test: faultfs.StartT runs
// it (go run) and drives its faults through its stdin and stdout. It is a
// module of its own so that go-fuse stays out of the library's go.mod: the
// tests that use faultfs import only its client, which needs no FUSE.
//
//	server DIR
//
// mounts the file system at DIR, writes "mounted" (or "error ...") and then
// obeys one command per line (see Serve) until its stdin ends.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: server DIR")
		os.Exit(2)
	}
	if err := Serve(os.Args[1], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Serve mounts a file system at dir, writes "mounted" (or "error ...") to
// out, and obeys one command per line from in, answering each with one
// line: "powerloss", "tornpowerloss SEED", "failsync ERRNO" (0 restores fsync), "nospace 0|1",
// "stats" (answered in JSON). When in ends it unmounts (lazily, if files
// are still open) and returns.
func Serve(dir string, in io.Reader, out io.Writer) error {
	f, err := Mount(dir)
	if err != nil {
		fmt.Fprintf(out, "error %v\n", err)
		return err
	}
	defer func() {
		if f.Unmount() != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	}()
	fmt.Fprintln(out, "mounted")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fmt.Fprintln(out, f.command(sc.Text()))
	}
	return nil
}

func (f *FS) command(line string) string {
	cmd, arg, _ := strings.Cut(line, " ")
	switch cmd {
	case "powerloss":
		f.PowerLoss()
	case "tornpowerloss":
		seed, err := strconv.ParseUint(arg, 10, 64)
		if err != nil {
			return "error " + err.Error()
		}
		f.TornPowerLoss(seed)
	case "failsync":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return "error " + err.Error()
		}
		f.FailSync(syscall.Errno(n))
	case "nospace":
		f.NoSpace(arg == "1")
	case "stats":
		b, _ := json.Marshal(f.Stats())
		return string(b)
	default:
		return fmt.Sprintf("error unknown command %q", line)
	}
	return "ok"
}
