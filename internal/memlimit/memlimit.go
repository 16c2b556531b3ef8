// Package memlimit tells what memory a pipedbn process may use on this
// machine, from /proc/meminfo and its cgroup, so that a run (the master's
// check before work, a slave's check of its assignment) is refused in one
// clear line instead of being killed when the machine runs out.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/pipedbn/pipedbn/internal/sat"
)

// ProcessOverhead is what a pipedbn process holds beyond its estimate: the
// Go runtime, the program, OpenBLAS's buffers, an embedded NATS server.
// Measured: a tiny greedy run peaks at 27 MiB resident, a tiny pipelined
// master with its embedded server at 35 MiB.
const ProcessOverhead = 64 << 20

// Here returns what this process may use: the smaller of this machine's
// MemAvailable and its cgroup's memory limit; false when neither is known.
func Here() (Limit, bool) { return Read(os.DirFS("/")) }

// SetSoft makes what this process may use the Go runtime's soft memory
// limit, unless GOMEMLIMIT sets one: a memory check admits work whose live
// heap fits, and without a soft limit the heap may grow to twice that
// between collections.
func SetSoft() {
	if lim, ok := Here(); ok && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(lim.Bytes)
	}
}

// MemoryLimit returns what this process may use: the smaller of this
// machine's MemAvailable and its cgroup's memory limit; false when neither
// is known. CheckLimits compares its estimates with it; a command may make
// it the Go runtime's soft limit (debug.SetMemoryLimit), so that a heap the
// estimate fits does not grow to twice that before it is collected.

// Limit is what this process may use, and where that figure comes
// from.
type Limit struct {
	Bytes int64
	// From names the source: MemAvailable or a cgroup's limit file.
	From string
}

// Text says the limit and where it comes from, for an error message.
func (l Limit) Text() string {
	if l.From == MemAvailable {
		return fmt.Sprintf("this machine has %s available (MemAvailable in /proc/meminfo)", BytesText(l.Bytes))
	}
	return fmt.Sprintf("this process's cgroup allows %s (%s)", BytesText(l.Bytes), l.From)
}

// MemAvailable is Limit.From for the machine's available memory.
const MemAvailable = "MemAvailable"

// cgroupUnlimited is where cgroup v1 reports no limit (it says
// 9223372036854771712, the largest page multiple).
const cgroupUnlimited = 1 << 62

// Read returns the smaller of this machine's MemAvailable and
// the memory limit of this process's cgroup (cgroup v2 memory.max, or the
// v1 memory controller's memory.limit_in_bytes, of its own cgroup or the
// nearest ancestor that sets one), read from fsys (the root file system);
// false when neither is known.
func Read(fsys fs.FS) (Limit, bool) {
	var lim Limit
	ok := false
	if b, err := meminfoAvailable(fsys); err == nil {
		lim, ok = Limit{Bytes: b, From: MemAvailable}, true
	}
	if b, file, found := cgroupLimit(fsys); found && (!ok || b < lim.Bytes) {
		lim, ok = Limit{Bytes: b, From: "/" + file}, true
	}
	return lim, ok
}

// meminfoAvailable reads MemAvailable from /proc/meminfo.
func meminfoAvailable(fsys fs.FS) (int64, error) {
	f, err := fsys.Open("proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !found {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("/proc/meminfo: MemAvailable:%s: want a number of kB", rest)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("/proc/meminfo: MemAvailable:%s: want a number of kB", rest)
		}
		return sat.Mul(kb, 1024), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/proc/meminfo: no MemAvailable")
}

// cgroupLimit returns the memory limit of this process's cgroup and the
// file that sets it (relative to the root), or false for none. It reads
// /proc/self/cgroup: "0::/path" for cgroup v2, "N:memory:/path" (among
// other controllers) for v1; a limit file is looked up in the cgroup's
// folder, then in each parent up to the hierarchy's root (inside a
// container /proc/self/cgroup may name a path its /sys/fs/cgroup does not
// show), and the smallest limit found wins.
func cgroupLimit(fsys fs.FS) (int64, string, bool) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, "", false
	}
	best, file, found := int64(0), "", false
	consider := func(root, p, name string) {
		dir := path.Join(root, p)
		if dir != root && !strings.HasPrefix(dir, root+"/") {
			dir = root // a path above the hierarchy's root (outside our namespace)
		}
		for {
			if v, ok := readCgroupValue(fsys, path.Join(dir, name)); ok && (!found || v < best) {
				best, file, found = v, path.Join(dir, name), true
			}
			if dir == root {
				return
			}
			dir = path.Dir(dir)
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			consider("sys/fs/cgroup", parts[2], "memory.max")
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			consider("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
		}
	}
	return best, file, found
}

// readCgroupValue reads a limit file: a number of bytes, or "max" (or a
// v1 number beyond cgroupUnlimited) for none.
func readCgroupValue(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v >= cgroupUnlimited {
		return 0, false // "max", or unreadable: no limit known
	}
	return v, true
}

// BytesText writes b in binary units, to 3 significant digits: "876 GiB",
// "1.23 TiB", "512 B".
func BytesText(b int64) string {
	const units = "KMGTPE"
	if b < 1024 {
		return fmt.Sprintf("%d B", b)
	}
	v, u := float64(b)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	prec := 2
	switch {
	case v >= 100:
		prec = 0
	case v >= 10:
		prec = 1
	}
	return fmt.Sprintf("%.*f %ciB", prec, v, units[u])
}
