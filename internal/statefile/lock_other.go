//go:build !unix

package statefile

import "errors"

// ErrInUse is a state file another process holds. Where file locks are not taken
// (this build), two processes on one data directory must not share a room name.
var ErrInUse = errors.New("in use by another process")

// Lock takes nothing on this platform.
func Lock(string) (func(), error) { return func() {}, nil }
