// Package testalloc measures allocation in tests that bound the memory one input may
// cost (testing.AllocsPerRun counts allocations, not bytes).
package testalloc

import "runtime"

// Bytes is how many bytes one call of fn allocates, on average over a few calls.
func Bytes(fn func()) float64 {
	const runs = 4
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fn() // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		fn()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / runs
}
