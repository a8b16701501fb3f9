//go:build !race

package waitingroom

const raceEnabled = false
