package room

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// InputError is a request the caller got wrong; the admin API answers it 400.
type InputError interface {
	error
	input()
}

// inputError is the room's InputError.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (inputError) input()          {}

func inputErrorf(format string, args ...any) error {
	return inputError{fmt.Errorf(format, args...)}
}

// ErrNoVisitor is returned when removing a visitor the room does not hold.
var ErrNoVisitor = errors.New("no such visitor in this room")

// ErrNoSecret is returned when the room cannot sign: no secret was configured and
// the store has not been reachable since start to agree on one.
var ErrNoSecret = errors.New("the room has no secret yet: its store has not been reachable since start")

// storeError logs a store failure, at most once per storeErrorLogEvery, with how many
// were not logged in between: an outage at 30k requests per second must not become
// 30k log lines per second.
func (rm *Room) storeError(op string, err error) {
	if errors.Is(err, context.Canceled) {
		// The caller gave up, not the store: a client that left mid-request, or the
		// room stopping under its own round. A hung store ends in a deadline instead.
		return
	}
	n := rm.errCount.Add(1)
	now := time.Now().UnixNano()
	last := rm.lastErrLog.Load()
	if now-last < int64(storeErrorLogEvery) || !rm.lastErrLog.CompareAndSwap(last, now) {
		return
	}
	rm.errCount.Add(-n)
	fail := "closed"
	if rm.cfg.FailOpen {
		fail = "open"
	}
	rm.cfg.Logger.Warn("waiting room store unavailable",
		zap.String("room", rm.cfg.Name),
		zap.String("during", op),
		zap.Int64("failures_since_last_log", n),
		zap.String("fail", fail),
		zap.Error(err))
}
