//go:build race

package waitingroom

// raceEnabled: the race detector makes sync.Pool drop items at random, so allocation
// counts that rely on a pool are not meaningful.
const raceEnabled = true
