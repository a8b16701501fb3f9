// Package testalloc measures allocation in tests that bound the memory one input may
// cost (testing.AllocsPerRun counts allocations, not bytes).
package testalloc

import "runtime"

// Bytes is how many bytes one call of fn allocates, on average over a few calls.
func Bytes(fn func()) float64 {
	const runs = 4
	return perCall(runs, fn, func(m *runtime.MemStats) uint64 { return m.TotalAlloc })
}

// Allocs is how many allocations one call of fn makes, on average over runs calls.
// Unlike testing.AllocsPerRun it keeps the fraction: a pool that loses an item now and
// then (the race detector drops one Put in four, a GC empties every pool) adds a
// fraction of an allocation per call, which AllocsPerRun rounds down on one side of an
// integer and not the other. Compare two paths with a margin below one allocation.
func Allocs(runs int, fn func()) float64 {
	return perCall(runs, fn, func(m *runtime.MemStats) uint64 { return m.Mallocs })
}

func perCall(runs int, fn func(), read func(*runtime.MemStats) uint64) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fn() // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		fn()
	}
	runtime.ReadMemStats(&after)
	return float64(read(&after)-read(&before)) / float64(runs)
}
