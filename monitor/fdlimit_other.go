//go:build !unix

package monitor

// fileLimit is unknown where there is no RLIMIT_NOFILE.
func fileLimit() (uint64, bool) { return 0, false }
