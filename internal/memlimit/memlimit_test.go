package memlimit

import (
	"math"
	"runtime"
	"testing"
	"testing/fstest"
)

func TestReadMemoryLimit(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	meminfo := "MemTotal:       24683620 kB\nMemFree:        1000 kB\nMemAvailable:   24177048 kB\n"
	avail := int64(24177048) * 1024
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Limit
		ok    bool
	}{
		{"no cgroup", map[string]string{"proc/meminfo": meminfo},
			Limit{avail, MemAvailable}, true},
		{"v2 limit below MemAvailable", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/user.slice/run-1.scope\n",
			"sys/fs/cgroup/user.slice/run-1.scope/memory.max": "4294967296\n",
		}, Limit{4 * gib, "/sys/fs/cgroup/user.slice/run-1.scope/memory.max"}, true},
		{"v2 max, a parent limits", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/user.slice/run-1.scope\n",
			"sys/fs/cgroup/user.slice/run-1.scope/memory.max": "max\n",
			"sys/fs/cgroup/user.slice/memory.max":             "2147483648\n",
		}, Limit{2 * gib, "/sys/fs/cgroup/user.slice/memory.max"}, true},
		{"v2 the smallest of the chain", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/a/b\n",
			"sys/fs/cgroup/a/b/memory.max": "3221225472\n",
			"sys/fs/cgroup/a/memory.max":   "1073741824\n",
		}, Limit{gib, "/sys/fs/cgroup/a/memory.max"}, true},
		{"v2 in a container: the path is not there, the root is", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/docker/0123abc\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, Limit{gib, "/sys/fs/cgroup/memory.max"}, true},
		{"v2 a path above the root", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/../../x\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, Limit{gib, "/sys/fs/cgroup/memory.max"}, true},
		{"v2 limit above MemAvailable", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "107374182400\n",
		}, Limit{avail, MemAvailable}, true},
		{"v1 unlimited (hybrid, like this machine)", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "5:devices:/\n4:memory:/process_api/39a8\n3:cpuset:/\n0::/\n",
			"sys/fs/cgroup/memory/process_api/39a8/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  "9223372036854771712\n",
		}, Limit{avail, MemAvailable}, true},
		{"v1 limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "7:cpu,cpuacct:/\n4:memory:/job\n",
			"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "536870912\n",
		}, Limit{gib / 2, "/sys/fs/cgroup/memory/job/memory.limit_in_bytes"}, true},
		{"cgroup only", map[string]string{
			"proc/self/cgroup": "0::/x\n", "sys/fs/cgroup/x/memory.max": "1073741824",
		}, Limit{gib, "/sys/fs/cgroup/x/memory.max"}, true},
		{"garbage", map[string]string{
			"proc/meminfo": "MemAvailable: lots\n", "proc/self/cgroup": "nonsense\n0::/x\n",
			"sys/fs/cgroup/x/memory.max": "-5\n",
		}, Limit{}, false},
		{"nothing", map[string]string{}, Limit{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			got, ok := Read(fsys)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Read() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestReadMemoryLimitHere reads this machine's limit: a linux machine has
// a MemAvailable.
func TestReadMemoryLimitHere(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	lim, ok := Here()
	if !ok || lim.Bytes <= 0 {
		t.Fatalf("Read(/) = %+v, %v; want a limit", lim, ok)
	}
	t.Logf("%s", lim.Text())
}

func TestBytesText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {1536, "1.50 KiB"}, {10 << 20, "10.0 MiB"},
		{128 << 20, "128 MiB"}, {22 << 30, "22.0 GiB"}, {940800000000, "876 GiB"},
		{5 << 40, "5.00 TiB"}, {math.MaxInt64, "8.00 EiB"},
	} {
		if got := BytesText(tc.b); got != tc.want {
			t.Errorf("BytesText(%d) = %q; want %q", tc.b, got, tc.want)
		}
	}
}
