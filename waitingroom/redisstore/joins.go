package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// maxJoinBatch bounds the visitors one join script takes, so one call never holds
// Redis for long.
const maxJoinBatch = 128

// joinBatcher turns the joins that arrive while a join round trip is in flight into
// the next round trip's batch. A lone visitor's join goes alone, from its own
// goroutine: one script call and no handoff (a goroutine started and woken for each
// lone join would cost it as much again as the script on a busy machine). Under a
// surge, one call takes many visitors, which saves Redis and both ends of the
// connection a request each; a goroutine drains the batches, and ends when nothing is
// pending.
//
// While the room has a line, a join that finds nothing in flight waits joinWait
// (join_wait, 0 unless set) for others to share its call. Those visitors are queued
// whatever happens, and wait minutes; a fleet's joins are its Redis's largest cost
// once the line moves, and a lone join costs Redis nearly as much as a batch of
// several (docs/performance.md, "A million waiters on one Redis"). With no line, a
// join may be an admission, and goes at once.
type joinBatcher struct {
	mu       sync.Mutex
	pending  []*joinRequest
	draining bool // a join is in flight or waiting: arrivals wait in pending for the next batch
	// line is whether the last answered join saw a line (it was queued, or others were
	// waiting): the next join will most likely be queued too.
	line atomic.Bool
}

type joinRequest struct {
	id   queue.VisitorID
	now  time.Time
	lim  queue.Limits
	ctx  context.Context // the caller's, bounded by the store's timeout: when it is done, the caller has given up
	done chan joinResult // buffered: the drain never waits for a caller that gave up
}

type joinResult struct {
	status queue.Status
	err    error
}

// Join takes a brand-new visitor (see queue.Store).
func (s *roomStore) Join(ctx context.Context, id queue.VisitorID, now time.Time, lim queue.Limits) (queue.Status, error) {
	req := &joinRequest{id: id, now: now, lim: lim, ctx: ctx}
	b := &s.joins
	b.mu.Lock()
	if !b.draining && (s.joinWait <= 0 || !b.line.Load()) {
		b.draining = true
		b.mu.Unlock()
		r := s.joinBatch(ctx, []*joinRequest{req})[0]
		if s.afterBatch(r.err) {
			go s.drainJoins()
		}
		return r.status, r.err
	}
	req.done = make(chan joinResult, 1)
	b.pending = append(b.pending, req)
	if !b.draining {
		b.draining = true
		time.AfterFunc(s.joinWait, s.drainJoins)
	}
	b.mu.Unlock()
	select {
	case r := <-req.done:
		return r.status, r.err
	case <-ctx.Done():
		return queue.Status{}, fmt.Errorf("joining room: %w", ctx.Err())
	}
}

// afterBatch decides, after a batch came back with err, whether the drain goes on. A
// batch that failed (Redis hung, or gone) fails every pending join at once with the
// same error, unsent: each would otherwise wait for a batch of its own to time out in
// turn, many timeouts in all, and none of them has been written anywhere.
func (s *roomStore) afterBatch(err error) (more bool) {
	b := &s.joins
	b.mu.Lock()
	var failed []*joinRequest
	if err != nil {
		failed, b.pending = b.pending, nil
	}
	more = len(b.pending) > 0
	b.draining = more
	b.mu.Unlock()
	for _, r := range failed {
		r.done <- joinResult{err: err}
	}
	return more
}

// drainJoins runs join scripts until nothing is pending. Requests with different limits
// (a reload or an admin change between them) go in separate calls. A request whose
// caller has given up is dropped (its visitor was answered as failed, so must get no
// place); a batch runs within the store's timeout, or before the earliest deadline
// of its callers if one is earlier.
func (s *roomStore) drainJoins() {
	b := &s.joins
	for {
		b.mu.Lock()
		n := 1
		for n < len(b.pending) && n < maxJoinBatch && b.pending[n].lim == b.pending[0].lim {
			n++
		}
		batch := b.pending[:n:n]
		b.pending = append([]*joinRequest(nil), b.pending[n:]...)
		b.mu.Unlock()
		batch = slices.DeleteFunc(batch, func(r *joinRequest) bool { return r.ctx.Err() != nil })
		var err error
		if len(batch) > 0 {
			deadline := time.Now().Add(s.timeout)
			for _, r := range batch {
				if d, ok := r.ctx.Deadline(); ok && d.Before(deadline) {
					deadline = d
				}
			}
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			results := s.joinBatch(ctx, batch)
			cancel()
			for i, r := range results {
				batch[i].done <- r
			}
			err = results[0].err
		}
		if !s.afterBatch(err) {
			return
		}
	}
}

// joinBatch runs one join script for the batch, all under the first one's limits, and
// returns each visitor's result in order.
func (s *roomStore) joinBatch(ctx context.Context, batch []*joinRequest) []joinResult {
	args := joinArgs(batch[0].lim, len(batch))
	for _, r := range batch {
		args = append(args, r.id[:], r.now.UnixMilli())
	}
	keys := append(s.keys[:len(s.keys):len(s.keys)], s.admissionsKey(batch[0].now))
	res, err := s.runKeys(ctx, keys, joinScript, args...).Int64Slice()
	if err == nil && len(res) != statusReply*len(batch) {
		err = fmt.Errorf("unexpected reply of %d numbers for %d visitors", len(res), len(batch))
	}
	out := make([]joinResult, len(batch))
	line := false
	for i := range batch {
		if err != nil {
			out[i].err = fmt.Errorf("joining room: %w", err)
			continue
		}
		st, bad := toStatus(res[statusReply*i : statusReply*(i+1)])
		out[i].status, out[i].err = st, bad
		line = line || st.State == queue.Queued || st.Waiting > 0
	}
	if err == nil {
		s.joins.line.Store(line)
	}
	return out
}

// joinArgs starts the join script's arguments: the limits, then room for each
// visitor's id and time of arrival, which the caller appends.
func joinArgs(lim queue.Limits, visitors int) []any {
	args := make([]any, 0, 7+2*visitors)
	return append(args, lim.Capacity, lim.SessionTTL.Milliseconds(), lim.Rate, lim.RatePer.Milliseconds(),
		flag(lim.Hold), flag(lim.NoQueue), flag(lim.Reasons))
}
