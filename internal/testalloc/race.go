//go:build race

package testalloc

// Race is whether the race detector is on. It makes sync.Pool drop items at random,
// so allocation counts that rely on a pool are not meaningful under it.
const Race = true
