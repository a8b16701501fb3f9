package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A script must not act after its caller has given up on it. A call written to a
// Redis that then hangs (SIGSTOP, a fork stall, a network path that blackholes) sits in
// a socket buffer; the caller times out and answers the visitor as failed, and when
// Redis resumes it would carry out the call anyway: a place nobody holds, a slot nobody
// uses, a revoke the visitor was told had failed. So every script call carries its
// deadline, in Redis's own clock, as ARGV[1]; lua/prelude.lua takes it off ARGV and
// compares it with Redis's TIME before anything is written, answering with an error
// reply (deadlineReply) once it has passed.
//
// Clocks. The deadline is converted to Redis's clock with an offset measured against
// the node that serves the room's hash slot (TIME, from a script on the room's keys, so
// a Cluster routes it to the right master). A sample read at Redis time T and received
// at local instant R says Redis's clock read T at some instant no later than R, so
// mapping a local instant L to T + (L - R) never runs ahead of Redis: the script's
// deadline is, if anything, early by up to the sample's round trip, never late. The
// mapping uses the monotonic clock from R on, so a local wall-clock step changes
// nothing; a sample is refreshed every clockRefreshEvery, and at once after a deadline
// reply (a Redis clock that jumped forward, or a failover to a master whose clock
// differs, rejects calls until then; one that jumped back accepts late calls until
// then). The script's deadline is also deadlineMargin of the timeout earlier than the
// caller's, so that a script that starts just in time still has its reply back before
// the caller gives up. What is left is a script that starts within that margin and
// whose reply is then lost: the caller counts it failed though it acted.
const (
	// clockRefreshEvery is how old a clock sample may get before a call refreshes it
	// (in the background: the call goes on with the old one).
	clockRefreshEvery = 10 * time.Second
	// deadlineMargin is the share of the timeout by which a script's deadline precedes
	// its caller's.
	deadlineMargin = 10
)

// deadlineReply starts the error reply of a script whose caller's deadline had passed
// (lua/prelude.lua answers with it).
const deadlineReply = "DEADLINE"

// clockSample is one reading of Redis's clock.
type clockSample struct {
	redisMs  int64     // Redis's TIME, unix ms
	received time.Time // local instant the reply arrived (monotonic)
	rtt      time.Duration
}

// redisClock keeps one room's offset to its Redis node's clock fresh.
type redisClock struct {
	sample     atomic.Pointer[clockSample]
	refreshing atomic.Bool
}

// toRedis maps the local instant at to Redis's clock, in unix ms, never late.
func (s *clockSample) toRedis(at time.Time) int64 {
	return s.redisMs + at.Sub(s.received).Milliseconds()
}

// deadline returns the deadline in Redis's clock for a call whose caller gives up at
// callerDeadline, measuring the clock first if it never was.
func (s *roomStore) deadline(ctx context.Context, callerDeadline time.Time) (int64, error) {
	c := &s.clock
	sample := c.sample.Load()
	if sample == nil {
		// Each caller measures for itself, within its own deadline: waiting for another
		// caller's measurement could make it wait more than one timeout. It happens only
		// until the first measurement succeeds.
		var err error
		if sample, err = s.measureClock(ctx); err != nil {
			return 0, err
		}
		c.sample.CompareAndSwap(nil, sample)
	} else if time.Since(sample.received) > clockRefreshEvery {
		s.refreshClock()
	}
	margin := time.Until(callerDeadline) / deadlineMargin
	return sample.toRedis(callerDeadline.Add(-margin)), nil
}

// refreshClock measures the clock again in the background, one measurement at a time.
// A sample whose round trip took longer than the margin (Redis stalled while it was
// read) is kept only if there is nothing better: it would make deadlines needlessly
// early.
func (s *roomStore) refreshClock() {
	c := &s.clock
	if !c.refreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer c.refreshing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		fresh, err := s.measureClock(ctx)
		if err != nil {
			return
		}
		if old := c.sample.Load(); old != nil && fresh.rtt > s.timeout/deadlineMargin && old.rtt < fresh.rtt {
			return
		}
		c.sample.Store(fresh)
	}()
}

func (s *roomStore) measureClock(ctx context.Context) (*clockSample, error) {
	sent := time.Now()
	vals, err := timeScript.Run(ctx, s.shared.client, s.keys[:1]).StringSlice()
	received := time.Now()
	s.shared.noteError(err)
	if err != nil {
		return nil, fmt.Errorf("reading redis clock: %w", timeScript.locate(err))
	}
	if len(vals) != 2 {
		return nil, fmt.Errorf("reading redis clock: unexpected reply %q", vals)
	}
	sec, err1 := strconv.ParseInt(vals[0], 10, 64)
	usec, err2 := strconv.ParseInt(vals[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("reading redis clock: %w", err)
	}
	return &clockSample{redisMs: sec*1000 + usec/1000, received: received, rtt: received.Sub(sent)}, nil
}

// isDeadlineReply reports whether err is a script's refusal to run past its deadline.
func isDeadlineReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), deadlineReply)
}
