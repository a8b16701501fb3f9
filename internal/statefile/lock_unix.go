//go:build unix

package statefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrInUse is a state file another process holds: a second Caddy on the same data
// directory, or `caddy validate` beside a running one.
var ErrInUse = errors.New("in use by another process")

// Lock takes path.lock for this process, so only one process restores and saves a
// room's file. The lock goes with the process, however it ends; release lets go of
// it sooner.
func Lock(path string) (release func(), err error) {
	if err := os.MkdirAll(dirOf(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrInUse
		}
		return nil, fmt.Errorf("locking %s.lock: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}
