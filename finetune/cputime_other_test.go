//go:build !linux

package finetune

// threadCPU reports that a thread's CPU time cannot be read here; the
// benchmarks then report wall-clock figures only.
func threadCPU() (int64, bool) { return 0, false }
