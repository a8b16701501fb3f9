//go:build !race

package testalloc

// Race is whether the race detector is on (see race.go).
const Race = false
