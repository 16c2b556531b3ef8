// Package heapprobe measures the peak live heap of a piece of work, for the
// tests that check memory estimates against it.
package heapprobe

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Peak runs fn and returns the peak of the heap's objects above what was
// live before, sampled every 100µs with the collector at GOGC=5, so that
// the heap holds little more than its live objects: a measure of the live
// bytes at the peak, up to about 5% over. The heap is the process's: do
// not run other work meanwhile.
func Peak(fn func()) int64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	runtime.GC() // and what sync.Pools kept through the first
	read := func() int64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	base := read()
	var (
		mu   sync.Mutex
		peak = base
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				v := read()
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	return max(peak, read()) - base
}
